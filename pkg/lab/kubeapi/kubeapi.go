package kubeapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Defaults for Options.
const (
	DefaultStartTimeout = 2 * time.Minute
	stopTimeout         = 15 * time.Second
	apiTimeout          = 10 * time.Second
)

// Options configure Start.
type Options struct {
	// Binary is the kube-apiserver helper; "" resolves it with Binary
	// (which may build it: minutes when the build cache is cold).
	Binary string
	// Address is where the API is served: the cluster's API VIP and port,
	// "127.x.y.z:6443". Port 0 picks a free one (see Server.Address).
	Address string
	// CACertPEM is the cluster's Kubernetes CA (the machine config's
	// cluster.ca.crt): the API trusts client certificates it signed and
	// clients verify the serving certificate with it.
	CACertPEM []byte
	// CAKeyPEM is the CA's key; it signs the serving certificate when
	// ServingCertPEM is empty.
	CAKeyPEM []byte
	// ExtraSANs are more addresses the serving certificate names (the
	// machine config's certSANs, such as the advertised floating IP).
	ExtraSANs []netip.Addr
	// ServingCertPEM and ServingKeyPEM are the API's serving certificate
	// (signed by CACertPEM, for the VIP) and key; empty: SignServingCert.
	ServingCertPEM, ServingKeyPEM []byte
	// DataDir holds etcd's data, the certificates and apiserver.log.
	// Required; it should be empty or from an earlier run of the same
	// cluster.
	DataDir string
	// StartTimeout bounds the start (not a build); default 2 minutes.
	StartTimeout time.Duration
	// PodTerminationDelay is how long the lab's kubelet takes to finish a
	// graceful pod deletion (0: at once).
	PodTerminationDelay time.Duration
	// Injector adds faults to the requests to Address (service "kubernetes");
	// nil adds none.
	Injector *labnet.Injector
	// Recorder records every request to Address; nil: a new one.
	Recorder *labnet.Recorder
	// Logf gets progress messages (a lazy build); nil discards them.
	Logf func(format string, args ...any)
	// ExtraArgs are appended to kube-apiserver's flags.
	ExtraArgs []string
	// Version, when set, is asked at every GET /version through Address
	// for the version to report instead of the binary's (the tag of the
	// control plane's configured kube-apiserver image, "v1.36.1"); "" or
	// a version that is not semantic reports the binary's.
	Version func() string
}

// Server is a running kube-apiserver with its front door, lab kubelet and
// controllers.
type Server struct {
	addr    string
	backend string
	etcd    string
	caPEM   []byte
	token   string
	dataDir string
	rec     *labnet.Recorder
	// opts and files start the helper again (RestartOnEtcd).
	opts  Options
	files pkiFiles

	// procMu guards proc and etcd, which RestartOnEtcd and LoseEtcd
	// replace.
	procMu sync.Mutex
	proc   *process
	// etcdLost: LoseEtcd stopped the apiserver; closed: Close did.
	etcdLost, closed bool
	front            *frontDoor
	frontSrv         *http.Server
	gate             *gate
	// primary is the host of addr (gate's); more serves the others.
	primary netip.Addr
	more    *addresses
	admin   *rest.Config
	client  kubernetes.Interface
	kubelet *kubelet
	ctrl    *controllers

	closeOnce sync.Once
	closeErr  error
}

// Start runs a kube-apiserver (with its embedded etcd) whose API is served
// on o.Address, and waits until it is ready. ctx bounds the start only;
// Close stops the server.
func Start(ctx context.Context, o Options) (_ *Server, err error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Recorder == nil {
		o.Recorder = &labnet.Recorder{}
	}
	vip, err := validate(o)
	if err != nil {
		return nil, err
	}
	if o.Binary == "" {
		if o.Binary, err = Binary(ctx, o.Logf); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()

	files, err := writeFiles(&o, vip)
	if err != nil {
		return nil, err
	}
	// The front door's address first: a taken VIP fails before the
	// apiserver starts.
	ln, err := labnet.Listen(ctx, o.Address)
	if err != nil {
		return nil, fmt.Errorf("kubeapi: %w", err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()

	proc, ready, err := startProcess(ctx, o, files, net.JoinHostPort(vip.String(), "0"))
	if err != nil {
		return nil, err
	}
	s := &Server{
		addr: ln.Addr().String(), backend: ready.Address, etcd: ready.Etcd, caPEM: o.CACertPEM, token: files.token,
		dataDir: o.DataDir, rec: o.Recorder, proc: proc,
		primary: vip, opts: o, files: files,
	}
	defer func() {
		if err != nil {
			_ = s.proc.stop()
		}
	}()
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	if err := s.openFrontDoor(ln, files, o); err != nil {
		return nil, err
	}
	s.kubelet = startKubelet(s.client, o.PodTerminationDelay)
	s.ctrl = startControllers(s.client, s.kubelet)
	return s, nil
}

func validate(o Options) (netip.Addr, error) {
	host, _, err := net.SplitHostPort(o.Address)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("kubeapi: address %q: %w", o.Address, err)
	}
	if err := labnet.CheckLoopback(host); err != nil {
		return netip.Addr{}, fmt.Errorf("kubeapi: %w", err)
	}
	switch {
	case o.DataDir == "":
		return netip.Addr{}, errors.New("kubeapi: DataDir is required")
	case len(o.CACertPEM) == 0:
		return netip.Addr{}, errors.New("kubeapi: CACertPEM (the cluster's Kubernetes CA) is required")
	case len(o.ServingCertPEM) == 0 && len(o.CAKeyPEM) == 0:
		return netip.Addr{}, errors.New("kubeapi: either ServingCertPEM/ServingKeyPEM or CAKeyPEM is required")
	case len(o.ServingCertPEM) != 0 && len(o.ServingKeyPEM) == 0:
		return netip.Addr{}, errors.New("kubeapi: ServingKeyPEM is required with ServingCertPEM")
	}
	return netip.MustParseAddr(host), nil
}

// connect builds the admin client (static token, straight to the apiserver:
// the lab's own calls are neither recorded nor given faults) and checks
// /readyz with it.
func (s *Server) connect(ctx context.Context) error {
	s.admin = &rest.Config{
		Host:            "https://" + s.backend,
		BearerToken:     s.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM},
		Timeout:         apiTimeout,
		QPS:             200,
		Burst:           400,
		Dial:            labnet.Dialer().DialContext,
	}
	cs, err := kubernetes.NewForConfig(s.admin)
	if err != nil {
		return fmt.Errorf("kubeapi: client: %w", err)
	}
	s.client = cs
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		return fmt.Errorf("kubeapi: /readyz after the ready file: %q: %w (log: %s)", body, err, s.proc.logPath)
	}
	return nil
}

func (s *Server) openFrontDoor(ln net.Listener, files pkiFiles, o Options) error {
	clientCAs, err := certPool(s.caPEM)
	if err != nil {
		return err
	}
	serving, err := tls.X509KeyPair(files.servingCert, files.servingKey)
	if err != nil {
		return fmt.Errorf("kubeapi: serving certificate: %w", err)
	}
	proxyCert, err := tls.X509KeyPair(files.proxy.certPEM, files.proxy.keyPEM)
	if err != nil {
		return fmt.Errorf("kubeapi: front-proxy certificate: %w", err)
	}
	s.front = newFrontDoor(s.backend, clientCAs, clientCAs, proxyCert, s.rec, o.Version)
	s.more = newAddresses(o, ln.Addr().(*net.TCPAddr).Port, serving)
	s.frontSrv = s.front.server(s.more.certificate, o.Injector)
	s.gate = newGate(ln, s.serveFront)
	return nil
}

// serveFront serves one of the API's listeners until it is closed.
func (s *Server) serveFront(l net.Listener) { _ = s.frontSrv.ServeTLS(l, "", "") }

// SetServing opens or closes the API's address: while not serving (its VIP
// has no owner) connections to Address are refused and those it had are
// cut; the apiserver behind it keeps running, so the lab's own calls
// (RESTConfig, Client) still work.
func (s *Server) SetServing(on bool) error { return s.gate.set(on) }

// Address is the API's address (the VIP and port), "127.x.y.z:6443".
func (s *Server) Address() string { return s.addr }

// URL is the API's URL, "https://127.x.y.z:6443".
func (s *Server) URL() string { return "https://" + s.addr }

// BackendAddress is the apiserver's own address: calls there bypass the
// recorder and the faults.
func (s *Server) BackendAddress() string { return s.backend }

// EtcdEndpoint is the client URL of the etcd the apiserver stores in, the
// helper's embedded one on the VIP at a free port ("http://127.x.y.z:port",
// plain HTTP, no authentication, as the apiserver reaches it): the lab's
// Talos control planes answer EtcdSnapshot from it. "" when the helper
// binary predates reporting it (rebuild it: make kube-apiserver).
func (s *Server) EtcdEndpoint() string {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	return s.etcd
}

// Recorder holds every call made to Address.
func (s *Server) Recorder() *labnet.Recorder { return s.rec }

// LogPath is the file the apiserver and etcd log to.
func (s *Server) LogPath() string { return s.process().logPath }

// PID is the apiserver process's id.
func (s *Server) PID() int { return s.process().cmd.Process.Pid }

// RESTConfig is an admin (system:masters) configuration that talks to the
// apiserver directly, for the lab's own plumbing and for test fixtures.
func (s *Server) RESTConfig() *rest.Config { return rest.CopyConfig(s.admin) }

// Client is an admin clientset on RESTConfig.
func (s *Server) Client() kubernetes.Interface { return s.client }

// Kubeconfig returns an admin kubeconfig for Address with the lab's static
// token (in group system:masters). Talos's Kubeconfig RPC hands out client
// certificates instead (SignClientCert); both work.
func (s *Server) Kubeconfig() ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: s.URL(), CertificateAuthorityData: s.caPEM}
	kc.AuthInfos["lab-admin"] = &clientcmdapi.AuthInfo{Token: s.token}
	kc.Contexts["lab-admin@lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "lab-admin"}
	kc.CurrentContext = "lab-admin@lab"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, fmt.Errorf("kubeapi: kubeconfig: %w", err)
	}
	return b, nil
}

// Close stops the lab's controllers and kubelet, the front door and the
// apiserver (SIGTERM, then SIGKILL after 15 s). It is safe to call more
// than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.ctrl.stop()
		s.kubelet.stop()
		// Not Shutdown: clients' HTTP/2 connections and watches would hold
		// it for its whole timeout, and the apiserver goes away anyway.
		s.gate.close()
		s.more.close()
		_ = s.frontSrv.Close()
		s.front.closeTransports()
		s.procMu.Lock()
		defer s.procMu.Unlock()
		s.closed = true
		if !s.etcdLost {
			s.closeErr = s.proc.stop()
		}
	})
	return s.closeErr
}

// pkiFiles are what writeFiles put into the data dir.
type pkiFiles struct {
	dir                     string
	caFile, certFile        string
	keyFile, frontProxyCA   string
	tokenFile               string
	token                   string
	servingCert, servingKey []byte
	proxy                   frontProxyPKI
}

// writeFiles writes the CA, the serving pair, the front-proxy CA and the
// static token file into DataDir/pki (0600).
func writeFiles(o *Options, vip netip.Addr) (pkiFiles, error) {
	f := pkiFiles{dir: filepath.Join(o.DataDir, "pki")}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return f, fmt.Errorf("kubeapi: %w", err)
	}
	var err error
	f.servingCert, f.servingKey = o.ServingCertPEM, o.ServingKeyPEM
	if len(f.servingCert) == 0 {
		if f.servingCert, f.servingKey, err = SignServingCert(o.CACertPEM, o.CAKeyPEM, vip, o.ExtraSANs...); err != nil {
			return f, err
		}
	}
	if f.proxy, err = newFrontProxyPKI(); err != nil {
		return f, err
	}
	if f.token, err = newToken(); err != nil {
		return f, err
	}
	f.caFile = filepath.Join(f.dir, "ca.crt")
	f.certFile = filepath.Join(f.dir, "apiserver.crt")
	f.keyFile = filepath.Join(f.dir, "apiserver.key")
	f.frontProxyCA = filepath.Join(f.dir, "front-proxy-ca.crt")
	f.tokenFile = filepath.Join(f.dir, "tokens.csv")
	for path, data := range map[string][]byte{
		f.caFile:       o.CACertPEM,
		f.certFile:     f.servingCert,
		f.keyFile:      f.servingKey,
		f.frontProxyCA: f.proxy.caPEM,
		f.tokenFile:    []byte(f.token + `,lab-admin,lab-admin,"system:masters"` + "\n"),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, fmt.Errorf("kubeapi: %w", err)
		}
	}
	return f, nil
}

// apiserverArgs are the helper's flags for one start.
func apiserverArgs(o Options, f pkiFiles, listen string) []string {
	args := []string{
		"-listen", listen,
		"-client-ca-file", f.caFile,
		"-tls-cert-file", f.certFile,
		"-tls-private-key-file", f.keyFile,
		"-data-dir", o.DataDir,
		"-ready-file", filepath.Join(o.DataDir, "ready"),
		"-ready-timeout", strconv.Itoa(int(o.StartTimeout.Seconds())) + "s",
		"--",
		"--token-auth-file=" + f.tokenFile,
		// The front door, as Talos configures the aggregator front proxy.
		"--requestheader-client-ca-file=" + f.frontProxyCA,
		"--requestheader-allowed-names=" + FrontProxyUser,
		"--requestheader-username-headers=" + headerUser,
		"--requestheader-group-headers=" + headerGroup,
		"--requestheader-extra-headers-prefix=" + headerPrefix + "Extra-",
	}
	return append(args, o.ExtraArgs...)
}
