package inspect

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// clusterDir writes a cluster directory's identity, talosconfig and a
// kubeconfig whose client certificate is the Kubernetes CA's own (any
// certificate does).
func clusterDir(t *testing.T) (*config.Cluster, *identity.Identity) {
	t.Helper()
	dir := t.TempDir()
	id, err := identity.Generate("v1.13.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Save(filepath.Join(dir, config.TalosSecretsFile)); err != nil {
		t.Fatal(err)
	}
	if err := identity.WriteTalosconfig(filepath.Join(dir, config.TalosconfigFile), id, "c", "10.0.0.2"); err != nil {
		t.Fatal(err)
	}
	kc := "apiVersion: v1\ncurrent-context: admin@c\ncontexts:\n- name: admin@c\n  context: {cluster: c, user: admin@c}\nusers:\n- name: other\n  user: {client-certificate-data: bm90}\n- name: admin@c\n  user:\n    client-certificate-data: " + base64.StdEncoding.EncodeToString(id.KubernetesCA()) + "\n    client-key-data: c2VjcmV0\n"
	if err := os.WriteFile(filepath.Join(dir, config.KubeconfigFile), []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return &config.Cluster{Name: "c", Dir: dir}, id
}

func notAfter(t *testing.T, pemData []byte) time.Time {
	t.Helper()
	b, _ := pem.Decode(pemData)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.NotAfter.UTC()
}

// Every certificate is reported with the NotAfter the certificate carries.
func TestCertificatesMatchTheFiles(t *testing.T) {
	t.Parallel()
	cfg, id := clusterDir(t)
	var rep checkReport
	rep.certificates(cfg, time.Now(), report.DefaultExpiryWarning)
	if len(rep.Incomplete) != 0 {
		t.Fatalf("incomplete: %v", rep.Incomplete)
	}
	crt, err := identity.TalosconfigCertificate(filepath.Join(cfg.Dir, config.TalosconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{config.TalosconfigFile: notAfter(t, crt), config.KubeconfigFile: notAfter(t, id.KubernetesCA())}
	for _, ca := range id.CACertificates() {
		want[ca.Name] = notAfter(t, ca.PEM)
	}
	var names []string
	for _, c := range rep.Certificates {
		names = append(names, c.Name)
		if !c.NotAfter.Equal(want[c.Name]) || c.Attention != "" || c.Renew == "" {
			t.Errorf("%s: not after %v attention %q renew %q, want %v, no attention", c.Name, c.NotAfter, c.Attention, c.Renew, want[c.Name])
		}
	}
	if !slices.Equal(names, []string{"talosconfig", "kubeconfig", "talos-ca", "kubernetes-ca", "etcd-ca", "aggregator-ca"}) {
		t.Errorf("certificates %v", names)
	}
	if !rep.finish().OK {
		t.Errorf("a check with fresh certificates needs attention: %+v", rep.Items)
	}
}

// Within the warning, each certificate needs attention and says how it is
// renewed.
func TestCertificatesWarnWithTheRenewal(t *testing.T) {
	t.Parallel()
	cfg, _ := clusterDir(t)
	var rep checkReport
	rep.certificates(cfg, time.Now(), 20*365*24*time.Hour)
	if rep.finish().OK || len(rep.Items) != 6 {
		t.Fatalf("ok with every certificate expiring within 20 years: %+v", rep.Items)
	}
	for _, it := range rep.Items {
		want := "kubectl talosc converge"
		if strings.HasSuffix(it.Name, "-ca") {
			want = "talosc cannot renew a cluster CA"
		}
		if !strings.Contains(it.Attention, "expires in") || !strings.Contains(it.Fix, want) {
			t.Errorf("%s: attention %q, fix %q, want the expiry and %q", it.Name, it.Attention, it.Fix, want)
		}
	}
}

// A certificate that cannot be read is never fine: the check is incomplete.
func TestCertificatesUnreadableAreIncomplete(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"no talosconfig", config.TalosconfigFile, "", "no talosconfig yet"},
		{"a talosconfig without a certificate", config.TalosconfigFile, "context: c\ncontexts:\n  c: {endpoints: [10.0.0.2]}\n", "certificate talosconfig (talosconfig): expiry unknown"},
		{"a kubeconfig with a token", config.KubeconfigFile, "current-context: a\ncontexts:\n- {name: a, context: {user: u}}\nusers:\n- {name: u, user: {token: x}}\n", "certificate kubeconfig (kubeconfig): expiry unknown"},
		{"a kubeconfig certificate that is not one", config.KubeconfigFile, "current-context: a\ncontexts:\n- {name: a, context: {user: u}}\nusers:\n- {name: u, user: {client-certificate-data: bm90}}\n", "no PEM certificate"},
		{"no talossecrets.yaml", config.TalosSecretsFile, "", "the cluster CAs' expiry is unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := clusterDir(t)
			path := filepath.Join(cfg.Dir, tc.file)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var rep checkReport
			rep.certificates(cfg, time.Now(), report.DefaultExpiryWarning)
			if len(rep.Incomplete) != 1 || !strings.Contains(rep.Incomplete[0], tc.want) || rep.finish().OK {
				t.Errorf("incomplete %q, want one reason with %q", rep.Incomplete, tc.want)
			}
			if strings.Contains(strings.Join(rep.Incomplete, " "), "c2VjcmV0") {
				t.Errorf("a key leaked: %v", rep.Incomplete)
			}
		})
	}
}
