package openstack_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/openstack"
)

// osc runs a batch of openstack CLI commands in one interactive session
// (one Python start-up instead of one per command) and returns every JSON
// document printed, in order, and stderr.
func osc(t *testing.T, lab *openstack.Cloud, cloud string, commands ...string) ([]map[string]any, string) {
	t.Helper()
	dir := t.TempDir()
	clouds := filepath.Join(dir, "clouds.yaml")
	if err := os.WriteFile(clouds, lab.CloudsYAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "openstack")
	cmd.Env = append(os.Environ(), "OS_CLIENT_CONFIG_FILE="+clouds, "OS_CLOUD="+cloud, "HOME="+dir, "XDG_CACHE_HOME="+dir, "PYTHONWARNINGS=ignore")
	cmd.Stdin = strings.NewReader(strings.Join(commands, "\n") + "\n")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openstack: %v\nstderr:\n%s", err, stderr.String())
	}
	var docs []map[string]any
	dec := json.NewDecoder(&stdout)
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stdout is not a JSON stream: %v\n%s", err, stdout.String())
		}
		switch v := v.(type) {
		case map[string]any:
			docs = append(docs, v)
		case []any:
			docs = append(docs, map[string]any{"list": v})
		}
	}
	return docs, stderr.String()
}

// TestOpenStackCLI drives Debian's openstack CLI (python3-openstackclient)
// against the lab, as .ci/run does: token issue, network, subnet, router,
// port, floating IP, security group, server create-list-delete and image
// create, as the member user of the real lab's clouds.yaml.
func TestOpenStackCLI(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("openstack"); err != nil {
		if os.Getenv("TALOSC_REQUIRE_OPENSTACK_CLI") != "" { // .ci/run installs it: there, a missing CLI is a failure
			t.Fatal("the openstack CLI is not on PATH but TALOSC_REQUIRE_OPENSTACK_CLI is set")
		}
		t.Skip("the openstack CLI is not on PATH (apt-get install -y python3-openstackclient); skipping its contract test")
	}
	// The CLI's --wait polls every 5 s after a first look: make the first
	// look see the end state.
	lab := start(t, openstack.Config{BootDelay: time.Millisecond, DeleteDelay: time.Millisecond})
	dir := t.TempDir()
	disk, userData := filepath.Join(dir, "disk.raw"), filepath.Join(dir, "machine.yaml")
	noErr(t, os.WriteFile(disk, []byte("talos raw disk"), 0o600))
	noErr(t, os.WriteFile(userData, []byte("version: v1alpha1\n"), 0o600))
	docs, stderr := osc(t, lab, "oslab-demo",
		"token issue -f json",
		"network create --mtu 1450 n1 -f json",
		"subnet create --network n1 --subnet-range 127.42.0.0/24 --dns-nameserver 1.1.1.1 s1 -f json",
		"router create r1 -f json",
		"router set --external-gateway public r1",
		"router add subnet r1 s1",
		"security group create --description demo-cluster sg1 -f json",
		"security group rule create --protocol tcp --dst-port 443 sg1 -f json",
		"port create --network n1 --fixed-ip subnet=s1,ip-address=127.42.0.5 --security-group sg1 p1 -f json",
		"port create --network n1 --allowed-address ip-address=127.42.0.5 --security-group sg1 p2 -f json",
		"floating ip create --port p1 --description kubeapi public -f json",
		"image create --disk-format raw --container-format bare --file "+disk+" img1 -f json",
		"server create --flavor m1.tiny --image img1 --port p2 --config-drive True --user-data "+userData+" --wait vm1 -f json",
		"server list -f json",
		"port list -f json",
		"floating ip list -f json",
		"security group list -f json",
		"router list -f json",
		"image list -f json",
	)
	want := []struct {
		key, value string
	}{
		{"project_id", ""},
		{"name", "n1"},
		{"cidr", "127.42.0.0/24"},
		{"name", "r1"},
		{"name", "sg1"},
		{"port_range_min", "443"},
		{"name", "p1"},
		{"name", "p2"},
		{"fixed_ip_address", "127.42.0.5"},
		{"name", "img1"},
		{"status", "ACTIVE"},
	}
	if len(docs) != len(want)+6 {
		t.Fatalf("%d JSON documents, want %d; stderr:\n%s", len(docs), len(want)+6, stderr)
	}
	for i, w := range want {
		if got := fmt.Sprint(docs[i][w.key]); (w.value == "" && got == "<nil>") || (w.value != "" && got != w.value) {
			t.Errorf("document %d: %s = %s, want %q", i, w.key, got, w.value)
		}
	}
	if n := len(docs[len(want)]["list"].([]any)); n != 1 {
		t.Errorf("server list: %d servers", n)
	}
	inv := lab.Inventory()
	if len(inv.Servers) != 1 || inv.Servers[0].UserData == "" || !inv.Servers[0].ConfigDrive || len(inv.FloatingIPs) != 1 {
		t.Fatalf("inventory after create: %+v", inv)
	}
	_, stderr = osc(t, lab, "oslab-demo",
		"server delete vm1", // --wait would poll every 5 s; the test polls the lab instead
		"floating ip delete "+inv.FloatingIPs[0].ID,
		"port delete p1 p2",
		"router remove subnet r1 s1",
		"router unset --external-gateway r1",
		"router delete r1",
		"subnet delete s1",
		"network delete n1",
		"security group delete sg1",
		"image delete img1",
	)
	eventually(t, "everything deleted", func() bool {
		inv = lab.Inventory()
		return len(inv.Servers)+len(inv.Ports)+len(inv.Routers)+len(inv.FloatingIPs)+len(inv.Images)+len(inv.Volumes) == 0 &&
			len(inv.Networks) == 1 && len(inv.Subnets) == 1 && len(inv.SecurityGroups) == 1
	})
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}
