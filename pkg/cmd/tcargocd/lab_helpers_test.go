package tcargocd_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosc/talosc/pkg/cmd/tcargocd"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/lab/argocd"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/plugin/plugintest"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// cluster is a real kube-apiserver standing for a downstream (talosc)
// cluster, with the admin kubeconfig Talos would hand out: its CA and a
// client certificate for admin/system:masters.
type cluster struct {
	srv                    *kubeapi.Server
	caPEM, certPEM, keyPEM []byte
	kubeconfig             []byte
}

// labs are the apiservers the tests share, started on first use and
// stopped by TestMain: the Argo CD management cluster (pkg/lab/argocd),
// a downstream cluster without a Rancher agent, and one the Rancher
// agent tests change.
var labs struct {
	once sync.Once
	err  error
	dir  string
	mgmt *argocd.Management
	// down is shared; down6 is TestAR6's alone (its cinder Secret would be
	// another test's unwanted object); down7 is TestAR7's.
	down, down6, down7 *cluster
}

func TestMain(m *testing.M) {
	code := m.Run()
	if labs.mgmt != nil {
		_ = labs.mgmt.Close()
	}
	for _, c := range []*cluster{labs.down, labs.down6, labs.down7} {
		if c != nil {
			_ = c.srv.Close()
		}
	}
	if labs.dir != "" {
		_ = os.RemoveAll(labs.dir)
	}
	os.Exit(code)
}

// startLabs returns the shared apiservers, skipping only a -short run
// without a prebuilt kube-apiserver helper.
func startLabs(t *testing.T) {
	t.Helper()
	if os.Getenv(kubeapi.EnvBinary) == "" && testing.Short() {
		t.Skipf("-short and $%s unset: not building the kube-apiserver helper", kubeapi.EnvBinary)
	}
	labs.once.Do(func() {
		ctx := context.Background()
		// Shared by every test, so not a test's TempDir; TestMain removes it.
		if labs.dir, labs.err = os.MkdirTemp("", "tcargocd-lab-"); labs.err != nil { //nolint:usetesting // see above
			return
		}
		labs.mgmt, labs.err = argocd.Start(ctx, argocd.Options{Address: "127.0.0.1:0", DataDir: filepath.Join(labs.dir, "argocd")})
		if labs.err != nil {
			return
		}
		if labs.down, labs.err = startCluster(ctx, filepath.Join(labs.dir, "down")); labs.err != nil {
			return
		}
		if labs.down6, labs.err = startCluster(ctx, filepath.Join(labs.dir, "down6")); labs.err != nil {
			return
		}
		labs.down7, labs.err = startCluster(ctx, filepath.Join(labs.dir, "down7"))
	})
	if labs.err != nil {
		t.Fatal(labs.err)
	}
}

func startCluster(ctx context.Context, dir string) (*cluster, error) {
	id, err := identity.Generate("v1.14")
	if err != nil {
		return nil, err
	}
	ca := id.Bundle().Certs.K8s
	srv, err := kubeapi.Start(ctx, kubeapi.Options{Address: "127.0.0.1:0", CACertPEM: ca.Crt, CAKeyPEM: ca.Key, DataDir: dir})
	if err != nil {
		return nil, err
	}
	c := &cluster{srv: srv, caPEM: ca.Crt}
	if c.certPEM, c.keyPEM, err = kubeapi.SignClientCert(ca.Crt, ca.Key, "admin", "system:masters"); err != nil {
		return nil, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["demo"] = &clientcmdapi.Cluster{Server: srv.URL() + "/", CertificateAuthorityData: ca.Crt}
	kc.AuthInfos["admin@demo"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.certPEM, ClientKeyData: c.keyPEM}
	kc.Contexts["admin@demo"] = &clientcmdapi.Context{Cluster: "demo", AuthInfo: "admin@demo"}
	kc.CurrentContext = "admin@demo"
	c.kubeconfig, err = clientcmd.Write(*kc)
	return c, err
}

// clusterDir is a bootstrapped cluster directory for down: its kubeconfig
// and the management cluster's as argocd-kubeconfig.
func clusterDir(t *testing.T, down *cluster) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string][]byte{config.KubeconfigFile: down.kubeconfig, "argocd-kubeconfig": labs.mgmt.Kubeconfig()} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// setup starts the labs and returns the harness of cluster name, with the
// net phase's outputs on stdin, and its directory on the shared downstream
// cluster.
func setup(t *testing.T, name string) (plugintest.Harness, string) {
	t.Helper()
	startLabs(t)
	return labHarness(name, netDoc(t, name)), clusterDir(t, labs.down)
}

// labHarness runs tc-argocd for cluster name on OpenStack, with the state
// document doc (nil: none) on stdin.
func labHarness(name string, doc *state.Document) plugintest.Harness {
	cfg := openstackCluster()
	cfg.Name = name
	cfg.OpenStack.CredentialID, cfg.OpenStack.CredentialSecret = "app-cred-id", appCredSecret
	return plugintest.Harness{Spec: tcargocd.Spec(), Sections: "argocd=argocd,rancher=rancher", Config: cfg, State: doc}
}

// Secret values the tests plant; none may ever be printed.
const (
	appCredSecret = "app-cred-SECRET-0451"
	gitToken      = "git-token-SECRET-0452"
)

// fullSection configures registration, the repositories and metallb.
func fullSection() map[string]any {
	return m{
		"kubeconfig": "argocd-kubeconfig",
		"admins":     l{"alice@example.edu"}, "users": l{"carol@example.edu"},
		"git": m{"url": gitURL, "username": "deploy", "token": gitToken}, "infra": m{"url": infraURL},
		"metallb": m{"enabled": true, "version": "0.14.9"},
	}
}

// noSecrets fails when any output holds a planted secret or key material
// of down.
func noSecrets(t *testing.T, down *cluster, outputs ...string) {
	t.Helper()
	key := strings.Split(strings.TrimSpace(string(down.keyPEM)), "\n")[1]
	for _, out := range outputs {
		for _, s := range []string{appCredSecret, gitToken, key} {
			if strings.Contains(out, s) {
				t.Errorf("a secret value was printed: %q in %q", s, out)
			}
		}
	}
}

// sectionOf is the plugin section's outputs decoded.
func sectionOf(t *testing.T, sec state.Section) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(sec.Outputs, &out); err != nil {
		t.Fatalf("outputs %s: %v", sec.Outputs, err)
	}
	return out
}

// mgmtSecret reads a Secret of the management cluster's argocd namespace;
// nil when absent.
func mgmtSecret(t *testing.T, name string) map[string]string {
	t.Helper()
	s, err := labs.mgmt.Client().CoreV1().Secrets(argocd.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	for k, v := range s.Annotations {
		out["annotation:"+k] = v
	}
	for k, v := range s.Labels {
		out["label:"+k] = v
	}
	return out
}

// argoObject reads an Application or AppProject; nil when absent.
func argoObject(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	gvr := argocd.ApplicationGVR()
	if kind == "AppProject" {
		gvr = argocd.AppProjectGVR()
	}
	u, err := labs.mgmt.Dynamic().Resource(gvr).Namespace(argocd.Namespace).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}
