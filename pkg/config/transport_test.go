package config_test

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
)

// TestValidate_PlainHTTPRefused: an http:// URL that credentials are sent
// to is refused, naming the key and the fix, unless the section opts in.
func TestValidate_PlainHTTPRefused(t *testing.T) {
	t.Parallel()
	none := config.LoadOptions{}
	runProblemCases(t, []problemCase{
		{
			"openstack http", only(edit(t, openstackBase, set("openstack.url", "http://keystone.example.edu:5000/v3/"))), none,
			config.Problems{inCluster("openstack.url", `openstack.url "http://keystone.example.edu:5000/v3/" is plain http: the application credential (and every token Keystone issues) would cross the network unencrypted; use https://, or set openstack.allow_http: true to accept that (a loopback lab)`)},
		},
		{
			"openstack http, opt-in false", only(edit(t, openstackBase, set("openstack.url", "http://k:5000/v3"), set("openstack.allow_http", "false"))), none,
			config.Problems{inCluster("openstack.url", `openstack.url "http://k:5000/v3" is plain http: the application credential (and every token Keystone issues) would cross the network unencrypted; use https://, or set openstack.allow_http: true to accept that (a loopback lab)`)},
		},
		{
			"proxmox http", only(edit(t, proxmoxBase, set("proxmox.url", "http://pve.example.edu:8006"))), none,
			config.Problems{inCluster("proxmox.url", `proxmox.url "http://pve.example.edu:8006" is plain http: the API token would cross the network unencrypted; use https://, or set proxmox.allow_http: true to accept that (a loopback lab)`)},
		},
		{
			"opt-in is a boolean", only(edit(t, proxmoxBase, set("proxmox.allow_http", "maybe"))), none,
			config.Problems{inCluster("proxmox.allow_http", `proxmox.allow_http must be true or false, not the string "maybe" (remove the quotes)`)},
		},
		{
			"opt-in is not a top-level key", only(edit(t, openstackBase, set("allow_http", "true"))), none,
			config.Problems{inCluster("", "unknown key(s): allow_http; talosc does not use them (is a plugin that uses them missing from PATH?)")},
		},
	})
}

// TestLoad_ReadableSecrets: a file holding credentials that the group or
// others can read is warned about (with the fix) and left as it is.
func TestLoad_ReadableSecrets(t *testing.T) {
	t.Parallel()
	const creds = "openstack:\n  credential_id: id\n  credential_secret: s\n"
	withInclude := "include: [secrets.yaml, more.yaml]\n" + openstackBase
	cases := []struct {
		name  string
		modes map[string]os.FileMode
		files map[string]string
		want  []string
	}{
		{"0600 is quiet", map[string]os.FileMode{"secrets.yaml": 0o600}, map[string]string{"secrets.yaml": creds}, nil},
		{"0400 is quiet", map[string]os.FileMode{"secrets.yaml": 0o400}, map[string]string{"secrets.yaml": creds}, nil},
		{"group-writable only is quiet", map[string]os.FileMode{"secrets.yaml": 0o620}, map[string]string{"secrets.yaml": creds}, nil},
		{
			"world-readable secrets.yaml",
			map[string]os.FileMode{"secrets.yaml": 0o644},
			map[string]string{"secrets.yaml": creds},
			[]string{"secrets.yaml holds credentials and is readable by its group and everyone (mode 0644); run chmod 600 DIR/secrets.yaml"},
		},
		{
			"group-readable empty secrets.yaml",
			map[string]os.FileMode{"secrets.yaml": 0o640},
			map[string]string{"secrets.yaml": "# nothing yet\n"},
			[]string{"secrets.yaml holds credentials and is readable by its group (mode 0640); run chmod 600 DIR/secrets.yaml"},
		},
		{
			"credentials in another include",
			map[string]os.FileMode{"more.yaml": 0o604},
			map[string]string{"secrets.yaml": "", "more.yaml": "tailscale: {auth_key: tskey-x}\n"},
			[]string{"more.yaml holds credentials and is readable by everyone (mode 0604); run chmod 600 DIR/more.yaml"},
		},
		{"an include without credentials", map[string]os.FileMode{"more.yaml": 0o644}, map[string]string{"secrets.yaml": "", "more.yaml": "tags: {team: a}\n"}, nil},
		{"a null credential is none", map[string]os.FileMode{"more.yaml": 0o644}, map[string]string{"secrets.yaml": "", "more.yaml": "tailscale: {auth_key: null}\n"}, nil},
		{"readable cluster.yaml without credentials", map[string]os.FileMode{"cluster.yaml": 0o644}, map[string]string{"secrets.yaml": "", "more.yaml": ""}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{config.ClusterFile: withInclude}
			maps.Copy(files, tc.files)
			if _, ok := files["more.yaml"]; !ok {
				files[config.ClusterFile] = "include: [secrets.yaml]\n" + openstackBase
			}
			dir := writeDir(t, files)
			for name, mode := range tc.modes {
				if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
					t.Fatal(err)
				}
			}
			c, err := config.Load(dir, config.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			real, err := filepath.EvalSymlinks(dir)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.ReplaceAll(w, "DIR", real))
			}
			if d := cmp.Diff(want, c.Warnings); d != "" {
				t.Errorf("warnings (-want +got):\n%s", d)
			}
			for name, mode := range tc.modes {
				fi, err := os.Stat(filepath.Join(dir, name))
				if err != nil || fi.Mode().Perm() != mode {
					t.Errorf("%s: mode changed by a load: %v %v", name, fi.Mode(), err)
				}
			}
		})
	}
}
