package machineconfig_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

// TestGenerate_Golden pins every provider × role × contract config. Each
// generated config has passed machinery validation (Generate validates)
// and fits Nova's user_data limit.
func TestGenerate_Golden(t *testing.T) {
	t.Parallel()
	providers := []struct {
		name  string
		input func(*testing.T) machineconfig.Input
		cp    string
		wk    string
	}{
		{"openstack", openstackGolden, "demo-controlplane-01", "demo-gpu-02"},
		{"proxmox", proxmoxGolden, "lab-controlplane-02", "lab-worker-01"},
	}
	contracts := []struct{ name, talos string }{{"v1.13", talos113}, {"v1.14", talos114}}
	for _, p := range providers {
		for _, role := range []string{"controlplane", "worker"} {
			for _, ct := range contracts {
				name := fmt.Sprintf("%s-%s-%s.yaml", p.name, role, ct.name)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					in := p.input(t)
					host := p.cp
					if role == "worker" {
						host = p.wk
					}
					c := mustGenerate(t, in, node(t, in.Cluster, host, ct.talos))
					if got := c.Contract().String(); got != ct.name {
						t.Errorf("contract %s, want %s", got, ct.name)
					}
					b := c.Bytes()
					if n := base64.StdEncoding.EncodedLen(len(b)); n > machineconfig.NovaUserDataLimit || n != c.UserDataSize() {
						t.Errorf("user data %d bytes (UserDataSize %d), limit %d", n, c.UserDataSize(), machineconfig.NovaUserDataLimit)
					}
					t.Logf("%s: %d bytes, %d base64, patches %v, warnings %v", name, len(b), c.UserDataSize(), c.Patches(), c.Warnings())
					assertGolden(t, name, b)
				})
			}
		}
	}
}

func openstackGolden(t *testing.T) machineconfig.Input {
	t.Helper()
	return openstackInput(t, openstackYAML)
}

func proxmoxGolden(t *testing.T) machineconfig.Input {
	t.Helper()
	return proxmoxInput(t, proxmoxYAML)
}
