package identity_test

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clientconfig "github.com/siderolabs/talos/pkg/machinery/client/config"

	"github.com/talosc/talosc/pkg/talos/identity"

	"github.com/talosc/talosc/pkg/config"
)

func loadFixture(t *testing.T) *identity.Identity {
	t.Helper()

	id, err := identity.Load(filepath.Join("testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	return id
}

func TestWriteTalosconfig_OneEndpointNoNodes(t *testing.T) {
	t.Parallel()

	id := loadFixture(t)
	dir := t.TempDir()
	path := filepath.Join(dir, config.TalosconfigFile)

	// An old, world-readable file with two endpoints and default nodes is
	// replaced, not merged.
	old := "context: demo\ncontexts:\n  demo:\n    endpoints: [10.0.0.5, 10.0.0.11]\n    nodes: [10.0.0.11]\n"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := identity.WriteTalosconfig(path, id, "demo", "demo-controlplane-01"); err != nil {
		t.Fatal(err)
	}

	if got := fileMode(t, path); got != 0o600 {
		t.Errorf("mode = %04o, want 0600", got)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if strings.Contains(string(data), "nodes:") {
		t.Errorf("talosconfig has default nodes:\n%s", data)
	}

	cfg, err := clientconfig.FromBytes(data)
	if err != nil {
		t.Fatal(err)
	}

	if cfg.Context != "demo" || len(cfg.Contexts) != 1 || cfg.Contexts["demo"] == nil {
		t.Fatalf("contexts = %v (current %q), want exactly one named demo", keys(cfg.Contexts), cfg.Context)
	}

	ctx := cfg.Contexts["demo"]
	if diff := cmp.Diff([]string{"demo-controlplane-01"}, ctx.Endpoints); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}

	if len(ctx.Nodes) != 0 {
		t.Errorf("nodes = %v, want none", ctx.Nodes)
	}

	ca := decodeB64(t, ctx.CA)
	if certFingerprint(t, ca) != certFingerprint(t, id.TalosCA()) {
		t.Error("talosconfig does not trust the identity's Talos CA")
	}

	verifyClientCert(t, ca, decodeB64(t, ctx.Crt))

	if len(decodeB64(t, ctx.Key)) == 0 {
		t.Error("talosconfig has no client key")
	}

	assertNoTempFiles(t, dir)
}

func keys(m map[string]*clientconfig.Context) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}

	return out
}

func decodeB64(t *testing.T, s string) []byte {
	t.Helper()

	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}

	return b
}

// verifyClientCert checks the admin certificate chains to the CA for client
// authentication and carries the os:admin role.
func verifyClientCert(t *testing.T, caPEM, crtPEM []byte) {
	t.Helper()

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("bad CA PEM")
	}

	block, _ := pem.Decode(crtPEM)
	if block == nil {
		t.Fatal("bad client certificate PEM")
	}

	crt, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := crt.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate does not verify against the Talos CA: %v", err)
	}

	if diff := cmp.Diff([]string{"os:admin"}, crt.Subject.Organization); diff != "" {
		t.Errorf("admin certificate roles (-want +got):\n%s", diff)
	}
}

func TestWriteTalosconfig_Refusals(t *testing.T) {
	t.Parallel()

	id := loadFixture(t)

	tests := []struct {
		name, cluster, endpoint, want string
		id                            *identity.Identity
	}{
		{"no cluster", "", "10.0.0.11", "empty cluster name", id},
		{"no endpoint", "demo", " ", "empty endpoint", id},
		{"no identity", "demo", "10.0.0.11", "no cluster identity", nil},
		{"zero identity", "demo", "10.0.0.11", "no cluster identity", &identity.Identity{}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			dir := t.TempDir()

			err := identity.WriteTalosconfig(filepath.Join(dir, "talosconfig"), tt.id, tt.cluster, tt.endpoint)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want %q", err, tt.want)
			}

			if names := dirNames(t, dir); len(names) != 0 {
				t.Errorf("wrote %v", names)
			}
		})
	}
}

func TestTalosEndpoint(t *testing.T) {
	t.Parallel()

	const host = "demo-controlplane-01"

	vips := []string{"10.0.0.5", "203.0.113.7"}

	tests := []struct {
		name string
		in   identity.EndpointInput
		want string
		err  string
	}{
		{
			name: "tailscale active: bare MagicDNS name",
			in:   identity.EndpointInput{Hostname: host, Address: "10.0.0.11", TailscaleActive: true, Forbidden: vips},
			want: host,
		},
		{
			name: "tailscale active with tailnet suffix",
			in:   identity.EndpointInput{Hostname: host, TailscaleActive: true, MagicDNSSuffix: ".tail1234.ts.net."},
			want: host + ".tail1234.ts.net",
		},
		{
			name: "tailscale active without an address",
			in:   identity.EndpointInput{Hostname: host, TailscaleActive: true},
			want: host,
		},
		{
			name: "tailscale inactive: real address",
			in:   identity.EndpointInput{Hostname: host, Address: "10.0.0.11", Forbidden: vips},
			want: "10.0.0.11",
		},
		{
			name: "tailscale inactive: IPv6 address",
			in:   identity.EndpointInput{Hostname: host, Address: " fd00::11 ", Forbidden: []string{"fd00::5"}},
			want: "fd00::11",
		},
		{
			name: "tailscale inactive: missing address",
			in:   identity.EndpointInput{Hostname: host, Forbidden: vips},
			err:  "no address known for demo-controlplane-01: talosctl needs a real control-plane address without tailscale",
		},
		{
			name: "VIP refused",
			in:   identity.EndpointInput{Hostname: host, Address: "10.0.0.5", Forbidden: vips},
			err:  "refusing 10.0.0.5 as the talos endpoint of demo-controlplane-01: it is the kube-API VIP",
		},
		{
			name: "floating IP refused",
			in:   identity.EndpointInput{Hostname: host, Address: "203.0.113.7:50000", Forbidden: vips},
			err:  "it is the kube-API VIP",
		},
		{
			name: "VIP refused in another IPv6 spelling",
			in:   identity.EndpointInput{Hostname: host, Address: "[fd00:0::5]:50000", Forbidden: []string{"fd00::5"}},
			err:  "it is the kube-API VIP",
		},
		{
			name: "missing hostname",
			in:   identity.EndpointInput{Address: "10.0.0.11"},
			err:  "empty control-plane hostname",
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := identity.TalosEndpoint(tt.in)

			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("TalosEndpoint() = %q, %v; want error containing %q", got, err, tt.err)
				}

				return
			}

			if err != nil || got != tt.want {
				t.Errorf("TalosEndpoint() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestReadTalosconfigEndpoint(t *testing.T) {
	t.Parallel()

	id := loadFixture(t)
	dir := t.TempDir()

	written := filepath.Join(dir, "written")
	if err := identity.WriteTalosconfig(written, id, "demo", "10.0.0.11"); err != nil {
		t.Fatal(err)
	}

	full, err := os.ReadFile(written)
	if err != nil {
		t.Fatal(err)
	}

	files := map[string]string{
		"empty":        "",
		"sequence":     "- a\n- b\n",
		"garbage":      "{{{{ not yaml",
		"truncated":    string(full[:40]),
		"no context":   "context: other\ncontexts:\n  demo:\n    endpoints: [10.0.0.11]\n",
		"no endpoints": "context: demo\ncontexts:\n  demo:\n    endpoints: []\n",
		"hand edited":  "context: demo\ncontexts:\n  demo:\n    endpoints: [ demo-controlplane-01 , 10.0.0.12]\n",
	}

	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		file string
		want string
		ok   bool
	}{
		{"written", "10.0.0.11", true},
		{"hand edited", "demo-controlplane-01", true},
		{"missing", "", false},
		{"empty", "", false},
		{"sequence", "", false},
		{"garbage", "", false},
		{"truncated", "", false},
		{"no context", "", false},
		{"no endpoints", "", false},
	}

	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()

			got, ok, err := identity.ReadTalosconfigEndpoint(filepath.Join(dir, tt.file))
			if err != nil || got != tt.want || ok != tt.ok {
				t.Errorf("ReadTalosconfigEndpoint() = (%q, %v, %v), want (%q, %v, nil)", got, ok, err, tt.want, tt.ok)
			}
		})
	}
}
