// Command kube-apiserver is the talosc lab's real Kubernetes API server: the
// kube-apiserver of k8s.io/kubernetes (cmd/kube-apiserver/app) backed by an
// embedded etcd, in one process, listening on loopback (127.0.0.0/8) only.
//
// There is no controller-manager, scheduler or kubelet: the lab (package
// pkg/lab/kubeapi of the talosc module) registers Nodes and plays the
// kubelet for the pods bound to them.
//
// Usage:
//
//	kube-apiserver -listen 127.40.0.1:6443 -client-ca-file ca.crt \
//	    -tls-cert-file apiserver.crt -tls-private-key-file apiserver.key \
//	    -data-dir DIR [-ready-file FILE] [-- extra kube-apiserver flags]
//
// Port 0 in -listen picks a free port. The embedded etcd listens on two free
// ports of the same address. Once /readyz answers "ok", the ready file (by
// default DIR/ready) is written with a JSON object holding the address, the
// process id and the etcd the apiserver stores in (the embedded one's client
// URL, or -etcd-servers as given). SIGTERM or SIGINT shuts the server down.
//
// This module is not part of the talosc module: importing k8s.io/kubernetes
// needs the replace block in go.mod, which would pin talosc's own client-go.
// Build it with "make kube-apiserver" (the Makefile stamps the version).
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // CronJob time zones, as the upstream binary

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// options are the command line of this helper; everything after "--" goes to
// kube-apiserver unchanged.
type options struct {
	listen       string
	clientCA     string
	tlsCert      string
	tlsKey       string
	dataDir      string
	readyFile    string
	etcdServers  string
	readyTimeout time.Duration
	extra        []string
}

func parse(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("kube-apiserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "", "loopback address IP:port to serve on (port 0 picks a free one)")
	fs.StringVar(&o.clientCA, "client-ca-file", "", "CA that signs client certificates (the cluster's Kubernetes CA)")
	fs.StringVar(&o.tlsCert, "tls-cert-file", "", "serving certificate (PEM)")
	fs.StringVar(&o.tlsKey, "tls-private-key-file", "", "serving key (PEM)")
	fs.StringVar(&o.dataDir, "data-dir", "", "directory for etcd's data and the service-account key")
	fs.StringVar(&o.readyFile, "ready-file", "", "file written once /readyz is ok (default DATA-DIR/ready)")
	fs.StringVar(&o.etcdServers, "etcd-servers", "", "use this loopback etcd instead of the embedded one")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", 3*time.Minute, "exit if /readyz is not ok by then")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.extra = fs.Args()
	// Flags this helper sets itself: passing them after "--" could make the
	// apiserver listen, or look for etcd, outside loopback.
	reserved := []string{"--bind-address", "--secure-port", "--advertise-address", "--etcd-servers"}
	for _, f := range []struct{ name, value string }{
		{"-listen", o.listen},
		{"-client-ca-file", o.clientCA},
		{"-tls-cert-file", o.tlsCert},
		{"-tls-private-key-file", o.tlsKey},
		{"-data-dir", o.dataDir},
	} {
		if f.value == "" {
			return o, fmt.Errorf("%s is required", f.name)
		}
	}
	host, _, err := net.SplitHostPort(o.listen)
	if err != nil {
		return o, fmt.Errorf("-listen: %w", err)
	}
	if err := checkLoopback(host); err != nil {
		return o, fmt.Errorf("-listen: %w", err)
	}
	for _, a := range o.extra {
		for _, r := range reserved {
			if a == r || strings.HasPrefix(a, r+"=") {
				return o, fmt.Errorf("%s is set by this helper (-listen, -etcd-servers)", r)
			}
		}
	}
	if o.etcdServers != "" {
		for s := range strings.SplitSeq(o.etcdServers, ",") {
			u, err := url.Parse(s)
			if err != nil {
				return o, fmt.Errorf("-etcd-servers: %w", err)
			}
			if err := checkLoopback(u.Hostname()); err != nil {
				return o, fmt.Errorf("-etcd-servers: %w", err)
			}
		}
	}
	if o.readyFile == "" {
		o.readyFile = filepath.Join(o.dataDir, "ready")
	}
	return o, nil
}

// checkLoopback refuses anything but an IPv4 address in 127.0.0.0/8.
func checkLoopback(host string) error {
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(a) {
		return fmt.Errorf("%q is not in 127.0.0.0/8: the lab only uses loopback addresses", host)
	}
	return nil
}

func run(args []string, stderr io.Writer) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "kube-apiserver:", err)
		return 2
	}
	code, err := serve(o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "kube-apiserver:", err)
		return 1
	}
	return code
}

func serve(o options, stderr io.Writer) (int, error) {
	dir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	if err := os.Remove(o.readyFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	host, port, err := net.SplitHostPort(o.listen)
	if err != nil {
		return 0, err
	}
	ports, err := freePorts(host, 3)
	if err != nil {
		return 0, err
	}
	if port == "0" {
		port = strconv.Itoa(ports[0])
	}
	listen := net.JoinHostPort(host, port)

	var etcd *embed.Etcd
	if o.etcdServers == "" {
		etcd, o.etcdServers, err = startEtcd(filepath.Join(dir, "etcd"), host, ports[1], ports[2])
		if err != nil {
			return 0, err
		}
		defer etcd.Close()
	}

	saKey, err := serviceAccountKey(filepath.Join(dir, "sa.key"))
	if err != nil {
		return 0, err
	}
	pin, err := firstCert(o.tlsCert)
	if err != nil {
		return 0, err
	}

	// Flags as Talos's control plane sets them where they matter here; the
	// rest are what a kubelet-less, controller-less apiserver on loopback needs.
	kargs := []string{
		"--bind-address=" + host,
		"--secure-port=" + port,
		"--advertise-address=" + host,
		// The "kubernetes" Endpoints would hold a loopback address, which
		// validation rejects every 10 s.
		"--endpoint-reconciler-type=none",
		"--etcd-servers=" + o.etcdServers,
		"--client-ca-file=" + o.clientCA,
		"--tls-cert-file=" + o.tlsCert,
		"--tls-private-key-file=" + o.tlsKey,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		// Without a controller-manager no "default" ServiceAccount exists.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--profiling=false",
	}
	kargs = append(kargs, o.extra...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := readyInfo{Address: listen, PID: os.Getpid(), Etcd: o.etcdServers}
	go func() {
		if err := waitReady(ctx, ready, pin, o.readyFile, o.readyTimeout); err != nil {
			fmt.Fprintln(stderr, "kube-apiserver:", err)
			os.Exit(1) // the apiserver owns the main goroutine; nothing else stops it
		}
	}()

	command := app.NewAPIServerCommand()
	command.SetArgs(kargs)
	return cli.Run(command), nil
}

// freePorts returns n distinct free TCP ports on host, holding every listener
// until all are found.
func freePorts(host string, n int) ([]int, error) {
	var ports []int
	for range n {
		var lc net.ListenConfig
		l, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func startEtcd(dir, host string, clientPort, peerPort int) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true // throw-away lab data
	cfg.LogLevel = "error"
	cfg.Logger = "zap"
	cfg.LogOutputs = []string{"stderr"}
	client := url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(clientPort))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort(host, strconv.Itoa(peerPort))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", errors.New("embedded etcd: not ready after 1m")
	}
	go func() {
		if err, ok := <-e.Err(); ok && err != nil {
			fmt.Fprintln(os.Stderr, "kube-apiserver: embedded etcd:", err)
			os.Exit(1) // etcd is gone: the apiserver cannot work
		}
	}()
	return e, client.String(), nil
}

// serviceAccountKey writes a fresh ECDSA P-256 key (the TokenRequest API
// signs with it) unless the data dir already has one.
func serviceAccountKey(path string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// firstCert returns the DER of the first certificate in a PEM file: the
// readiness probe pins it, whichever CA signed it.
func firstCert(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("%s: no CERTIFICATE block", path)
		}
		if blk.Type == "CERTIFICATE" {
			return blk.Bytes, nil
		}
	}
}

// readyInfo is what the ready file holds.
type readyInfo struct {
	Address string `json:"address"`
	PID     int    `json:"pid"`
	// Etcd is the --etcd-servers the apiserver was given: the embedded
	// etcd's client URL (http://IP:port), or -etcd-servers.
	Etcd string `json:"etcd"`
}

// waitReady polls /readyz anonymously (the system:public-info-viewer role
// allows it) and writes the ready file once it answers "ok".
func waitReady(ctx context.Context, ready readyInfo, pin []byte, readyFile string, timeout time.Duration) error {
	listen := ready.Address
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // the serving certificate is pinned below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || string(cs.PeerCertificates[0].Raw) != string(pin) {
				return errors.New("serving certificate does not match -tls-cert-file")
			}
			return nil
		},
	}}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 2 * time.Second}
	start := time.Now()
	deadline := time.After(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+listen+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && string(body) == "ok" {
				return writeReady(readyFile, ready, time.Since(start))
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-deadline:
			return fmt.Errorf("/readyz not ok after %s", timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func writeReady(path string, ready readyInfo, took time.Duration) error {
	b, err := json.Marshal(ready)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "kube-apiserver: ready on https://%s (etcd %s) after %s\n", ready.Address, ready.Etcd, took.Round(time.Millisecond))
	return nil
}
