package identity_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/talos/identity"

	"github.com/talosc/talosc/pkg/config"
)

// talosKubeconfig is the shape `talosctl kubeconfig` writes.
func talosKubeconfig(server string) string {
	return `apiVersion: v1
kind: Config
clusters:
    - name: demo
      cluster:
        server: ` + server + `
        certificate-authority-data: LS0tLS1CRUdJTg==
users:
    - name: admin@demo
      user:
        client-certificate-data: LS0tLS1CRUdJTg==
        client-key-data: LS0tLS1CRUdJTg==
contexts:
    - context:
        cluster: demo
        namespace: default
        user: admin@demo
      name: admin@demo
current-context: admin@demo
`
}

const twoClusters = `clusters:
- name: old
  cluster: {server: "https://10.9.9.9:6443"}
- name: demo
  cluster: {server: "https://127.16.0.5:6443"}
contexts:
- name: a
  context: {cluster: old}
- name: admin@demo
  context: {cluster: demo}
current-context: admin@demo
`

func TestReadKubeconfig(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name         string
		content      *string // nil = no file
		bootstrapped bool
		want         *identity.Kubeconfig
	}{
		{"missing", nil, false, nil},
		{"empty", new(""), false, nil},
		{"whitespace", new(" \n\t\n"), false, nil},
		{
			"IPv4 with port", new(talosKubeconfig("https://127.16.0.5:6443")), true,
			&identity.Kubeconfig{Server: "https://127.16.0.5:6443", ServerHost: "127.16.0.5"},
		},
		{
			"DNS name", new(talosKubeconfig("https://Kube.Example.com.:6443")), true,
			&identity.Kubeconfig{Server: "https://Kube.Example.com.:6443", ServerHost: "kube.example.com"},
		},
		{
			"IPv6", new(talosKubeconfig("https://[fd00:0::5]:6443")), true,
			&identity.Kubeconfig{Server: "https://[fd00:0::5]:6443", ServerHost: "fd00::5"},
		},
		{
			"no scheme", new(talosKubeconfig("127.16.0.5:6443")), true,
			&identity.Kubeconfig{Server: "127.16.0.5:6443", ServerHost: "127.16.0.5"},
		},
		{
			"no port", new(talosKubeconfig("https://203.0.113.7")), true,
			&identity.Kubeconfig{Server: "https://203.0.113.7", ServerHost: "203.0.113.7"},
		},
		{
			"current context picks the cluster", new(twoClusters), true,
			&identity.Kubeconfig{Server: "https://127.16.0.5:6443", ServerHost: "127.16.0.5"},
		},
		{
			"no current context, two clusters", new(strings.Replace(twoClusters, "current-context: admin@demo", "", 1)), true,
			&identity.Kubeconfig{},
		},
		{
			"no current context, one cluster",
			new(strings.Replace(talosKubeconfig("https://127.16.0.5:6443"), "current-context: admin@demo", "", 1)), true,
			&identity.Kubeconfig{Server: "https://127.16.0.5:6443", ServerHost: "127.16.0.5"},
		},
		{"non-mapping", new("- just\n- a list\n"), true, &identity.Kubeconfig{}},
		{"truncated", new(talosKubeconfig("https://127.16.0.5:6443")[:60]), true, &identity.Kubeconfig{}},
		{"garbage", new("\x00\x01{{{"), true, &identity.Kubeconfig{}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			path := filepath.Join(t.TempDir(), config.KubeconfigFile)
			if tt.content != nil {
				if err := os.WriteFile(path, []byte(*tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			got, bootstrapped, err := identity.ReadKubeconfig(path)
			if err != nil {
				t.Fatal(err)
			}

			if bootstrapped != tt.bootstrapped {
				t.Errorf("bootstrapped = %v, want %v", bootstrapped, tt.bootstrapped)
			}

			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kubeconfig (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteKubeconfig(t *testing.T) {
	t.Parallel()

	dir := t.TempDir()
	path := filepath.Join(dir, config.KubeconfigFile)

	if err := identity.WriteKubeconfig(path, []byte(" \n")); err == nil {
		t.Error("an empty kubeconfig was written")
	}

	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("refused write left %v", names)
	}

	for _, server := range []string{"https://127.16.0.5:6443", "https://10.0.0.6:6443"} {
		if err := identity.WriteKubeconfig(path, []byte(talosKubeconfig(server))); err != nil {
			t.Fatal(err)
		}

		if got := fileMode(t, path); got != 0o600 {
			t.Errorf("mode = %04o, want 0600", got)
		}

		kc, ok, err := identity.ReadKubeconfig(path)
		if err != nil || !ok || kc.Server != server {
			t.Errorf("read back = (%+v, %v, %v), want server %s", kc, ok, err, server)
		}
	}

	assertNoTempFiles(t, dir)
}
