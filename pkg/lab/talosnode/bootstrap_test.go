package talosnode_test

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

func TestBootstrap(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	var (
		mu   sync.Mutex
		info []talosnode.BootstrapInfo
	)
	timing := fastTiming()
	timing.Services = time.Second // a visible "not available yet" window
	l := newLab(t, fx, talosnode.Options{Timing: timing, OnBootstrap: func(i talosnode.BootstrapInfo) {
		mu.Lock()
		defer mu.Unlock()
		info = append(info, i)
	}})
	l.boot(cp(1), cp(2), cp(3))
	c := l.client(cp(1))

	err := c.Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{})
	if status.Code(err) != codes.FailedPrecondition || !contains(err, "bootstrap is not available yet") {
		t.Fatalf("early Bootstrap: %v, want FailedPrecondition: bootstrap is not available yet", err)
	}
	eventually(t, "bootstrap accepted", func() bool {
		err = c.Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{})
		return status.Code(err) != codes.FailedPrecondition
	})
	if err != nil {
		t.Fatalf("Bootstrap: %v", err)
	}
	err = c.Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{})
	if status.Code(err) != codes.AlreadyExists || !contains(err, "etcd data directory is not empty") {
		t.Fatalf("second Bootstrap: %v, want AlreadyExists", err)
	}
	// the other control planes joined: bootstrapping them is "already" too
	eventually(t, "3 started members", func() bool { return l.startedMembers() == 3 })
	if err := l.client(cp(2)).Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("Bootstrap on a joined control plane: %v, want AlreadyExists", err)
	}
	// a worker answers "not available yet" until its services run, as
	// machined checks the CRI before the machine type
	l.boot(worker)
	wc := l.client(worker)
	eventually(t, "worker services", func() bool {
		err = wc.Bootstrap(ctx(t, 2*time.Second), &machine.BootstrapRequest{})
		return status.Code(err) != codes.FailedPrecondition
	})
	if status.Code(err) != codes.Unimplemented || !contains(err, "bootstrap is only available on control plane nodes") {
		t.Fatalf("Bootstrap on a worker: %v, want Unimplemented", err)
	}
	if d := l.nodes[cp(1)].Cluster().DoubleBootstrapped(); len(d) != 0 {
		t.Fatalf("double bootstrap recorded: %v", d)
	}

	resp, err := c.EtcdMemberList(ctx(t, 2*time.Second), &machine.EtcdMemberListRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range resp.GetMessages()[0].GetMembers() {
		names = append(names, m.GetHostname())
		if m.GetIsLearner() || len(m.GetPeerUrls()) != 1 || len(m.GetClientUrls()) != 1 {
			t.Errorf("member %+v: want a started voter with one peer and one client URL", m)
		}
	}
	if len(names) != 3 || names[0] != cp(1) {
		t.Fatalf("members %v, want cp-01 first of 3", names)
	}

	eventually(t, "OnBootstrap", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(info) == 1
	})
	if got := info[0].Endpoint.String(); got != "https://"+fx.vip.String()+":6443" {
		t.Errorf("OnBootstrap endpoint %s", got)
	}
	if !bytes.Equal(info[0].CACert, fx.id.KubernetesCA()) || len(info[0].CAKey) == 0 {
		t.Error("OnBootstrap did not get the cluster's Kubernetes CA")
	}
}

func TestKubeconfig(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1), worker)
	data, err := l.client(cp(1)).Kubeconfig(ctx(t, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Clusters []struct {
			Name    string `yaml:"name"`
			Cluster struct {
				Server string `yaml:"server"`
				CA     string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			Name string `yaml:"name"`
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
		CurrentContext string `yaml:"current-context"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil {
		t.Fatalf("kubeconfig: %v\n%s", err, data)
	}
	if len(kc.Clusters) != 1 || len(kc.Users) != 1 || kc.CurrentContext != "admin@lab" {
		t.Fatalf("kubeconfig shape:\n%s", data)
	}
	if want := "https://" + fx.vip.String() + ":6443"; kc.Clusters[0].Cluster.Server != want {
		t.Errorf("server %s, want %s", kc.Clusters[0].Cluster.Server, want)
	}
	ca := decodePEM(t, kc.Clusters[0].Cluster.CA)
	if !bytes.Equal(ca, fx.id.KubernetesCA()) {
		t.Error("certificate-authority-data is not the cluster's Kubernetes CA")
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(fx.id.KubernetesCA())
	block, _ := pem.Decode(decodePEM(t, kc.Users[0].User.Cert))
	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate does not chain to the Kubernetes CA: %v", err)
	}
	if crt.Subject.CommonName != "admin" || len(crt.Subject.Organization) != 1 || crt.Subject.Organization[0] != "system:masters" {
		t.Errorf("client certificate subject %v", crt.Subject)
	}
	if len(decodePEM(t, kc.Users[0].User.Key)) == 0 {
		t.Error("no client key")
	}
	if _, err := l.client(worker).Kubeconfig(ctx(t, 2*time.Second)); status.Code(err) != codes.Unimplemented {
		t.Fatalf("Kubeconfig on a worker: %v, want Unimplemented", err)
	}
}

// decodePEM decodes base64 kubeconfig data.
func decodePEM(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
