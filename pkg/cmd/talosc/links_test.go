package talosc_test

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are the libraries only the phase binaries link: Talos machinery
// (the config generator, cel-go), the cloud SDKs, and etcd's server code
// (a backup's verification, tc-nodes only).
var heavy = []string{
	"github.com/siderolabs/talos/pkg/machinery",
	"github.com/gophercloud/",
	"github.com/luthermonson/go-proxmox",
	"go.etcd.io/etcd/server/",
	"go.etcd.io/etcd/etcdutl/",
	"go.etcd.io/bbolt",
}

// The front door and the plugins link neither Talos machinery nor a cloud
// SDK: the phase binaries choose their providers (pkg/provider/clouds) and
// the front door names the identity file through config. depguard sees
// only direct imports; this sees what a binary links.
func TestFrontDoorAndPluginsLinkNoMachineryNorCloudSDK(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	const module = "github.com/talosc/talosc/cmd/"
	out, err := exec.CommandContext(t.Context(), goTool, "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`,
		module+"kubectl-talosc", module+"tc-argocd", module+"tc-rancher").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		binary, deps, _ := strings.Cut(strings.TrimSpace(line), " ")
		for dep := range strings.FieldsSeq(deps) {
			for _, h := range heavy {
				if strings.HasPrefix(dep, h) {
					t.Errorf("%s links %s", strings.TrimPrefix(binary, module), dep)
				}
			}
		}
	}
}
