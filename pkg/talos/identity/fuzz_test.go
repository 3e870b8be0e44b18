package identity_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/talosc/talosc/pkg/talos/identity"
)

// FuzzParse checks that no identity file content panics the loader.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"talossecrets.yaml", "talossecrets-legacy.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}

		f.Add(data)
		f.Add(data[:len(data)/3])
	}

	f.Add([]byte("cluster: ~\ncerts:\n  os: {crt: 1}\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := identity.Parse(data)
		if err == nil && id.Bundle() == nil {
			t.Fatal("nil bundle without an error")
		}
	})
}

// FuzzClientFiles checks that hand-edited or truncated client files never
// panic the readers (I-A4).
func FuzzClientFiles(f *testing.F) {
	f.Add([]byte(talosKubeconfig("https://10.0.0.5:6443")))
	f.Add([]byte(twoClusters))
	f.Add([]byte("context: demo\ncontexts:\n  demo:\n"))
	f.Add([]byte("context: demo\ncontexts:\n  demo:\n    endpoints: [a]\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}

		if _, _, err := identity.ReadKubeconfig(path); err != nil {
			t.Fatal(err)
		}

		if _, _, err := identity.ReadTalosconfigEndpoint(path); err != nil {
			t.Fatal(err)
		}
	})
}
