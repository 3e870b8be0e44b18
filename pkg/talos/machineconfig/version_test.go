package machineconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

func TestContractFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		version  string
		want     string // contract, "" when refused
		multidoc bool
		errHas   string
	}{
		{"v1.13.0", "v1.13", false, ""},
		{"v1.13.8", "v1.13", false, ""},
		{"1.13.8", "v1.13", false, ""},
		{"v1.14.0-beta.1", "v1.14", true, ""},
		{"v1.14.1", "v1.14", true, ""},
		{"v1.12.9", "", false, "older than v1.13"},
		{"v0.14.0", "", false, "older than v1.13"},
		{"v1.15.0", "", false, "upgrade talosc"},
		{"v2.0.0", "", false, "upgrade talosc"},
		{"v1.13", "", false, "not a version"},
		{"", "", false, "not a version"},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			t.Parallel()
			c, err := machineconfig.ContractFor(tc.version)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("ContractFor(%q) = %v, %v; want an error containing %q", tc.version, c, err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("ContractFor(%q): %v", tc.version, err)
			}
			if c.String() != tc.want || c.MultidocKubernetesConfigSupported() != tc.multidoc {
				t.Errorf("ContractFor(%q) = %s (typed kubernetes documents %v), want %s (%v)",
					tc.version, c, c.MultidocKubernetesConfigSupported(), tc.want, tc.multidoc)
			}
		})
	}
}

// TestContractFloorMatchesLoader keeps ContractFor's oldest contract in
// step with the support matrix of pkg/config, which refuses older pins.
func TestContractFloorMatchesLoader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	text := strings.Replace(openstackYAML, "version: v1.14.1", "version: v1.12.9", 1)
	if err := os.WriteFile(filepath.Join(dir, config.ClusterFile), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := config.Load(dir, config.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "older than v1.13.0") {
		t.Fatalf("loader error %v; want talos.version v1.12.9 refused as older than v1.13.0", err)
	}
	if _, err := machineconfig.ContractFor("v1.12.9"); err == nil {
		t.Fatalf("ContractFor(v1.12.9) accepted a version the loader refuses")
	}
	if _, err := machineconfig.ContractFor("v1.13.0"); err != nil {
		t.Fatalf("ContractFor(v1.13.0): %v; the loader accepts it", err)
	}
}

func TestKubernetesVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		q    machineconfig.KubeVersionQuery
		want string
		err  string
	}{
		{"new node gets the target", machineconfig.KubeVersionQuery{Target: "v1.36.1", Running: "v1.34.2"}, "v1.36.1", ""},
		{"existing node keeps running", machineconfig.KubeVersionQuery{Target: "v1.36.1", Running: "v1.34.2", Existing: true}, "v1.34.2", ""},
		{"no cluster yet", machineconfig.KubeVersionQuery{Target: "1.36.1"}, "v1.36.1", ""},
		{"normalises running", machineconfig.KubeVersionQuery{Target: "v1.36.1", Running: "1.35.0", Existing: true}, "v1.35.0", ""},
		{
			"I-13 unknown running refused",
			machineconfig.KubeVersionQuery{Target: "v1.36.1", Existing: true},
			"",
			"could not determine the running cluster's kubernetes version while the kube-api is up; refusing to generate machine configs against an unknown version",
		},
		{"I-13 dry run without kubeconfig keeps target", machineconfig.KubeVersionQuery{Target: "v1.36.1", Existing: true, DryRunWithoutKubeconfig: true}, "v1.36.1", ""},
		{
			"downgrade refused",
			machineconfig.KubeVersionQuery{Target: "v1.35.0", Running: "v1.36.1", Existing: true},
			"",
			"kubernetes.version v1.35.0 is older than the running v1.36.1; kubernetes downgrades are not supported",
		},
		{"bad running", machineconfig.KubeVersionQuery{Target: "v1.36.1", Running: "1.36", Existing: true}, "", "running kubernetes version"},
		{"bad target", machineconfig.KubeVersionQuery{Target: "latest"}, "", "kubernetes.version"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := machineconfig.KubernetesVersion(tc.q)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("KubernetesVersion(%+v) = %q, %v; want error %q", tc.q, got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("KubernetesVersion(%+v) = %q, %v; want %q", tc.q, got, err, tc.want)
			}
		})
	}
	if _, err := machineconfig.KubernetesVersion(machineconfig.KubeVersionQuery{Target: "v1.36.1", Existing: true}); !errors.Is(err, machineconfig.ErrUnknownRunningKubernetes) {
		t.Errorf("unknown running version: %v, want ErrUnknownRunningKubernetes", err)
	}
}

// TestGenerate_VersionsPerNode checks that a config carries the node's own
// Kubernetes version (running for existing nodes) and that the contract
// follows the node's Talos version, not talos.version.
func TestGenerate_VersionsPerNode(t *testing.T) {
	t.Parallel()
	in := openstackInput(t, openstackYAML) // talos.version v1.14.1
	n := node(t, in.Cluster, "demo-gpu-01", "v1.13.8")
	n.KubernetesVersion = "1.34.2"
	c := mustGenerate(t, in, n)
	if c.Contract().String() != "v1.13" {
		t.Errorf("contract %s for a node running v1.13.8, want v1.13", c.Contract())
	}
	v1 := legacyDoc(t, documents(t, c.Bytes()))
	if got := dig(v1, "machine", "kubelet", "image"); got != "ghcr.io/siderolabs/kubelet:v1.34.2" {
		t.Errorf("kubelet image %v, want the node's v1.34.2", got)
	}
	n.KubernetesVersion = "latest"
	if _, err := machineconfig.Generate(in, n); err == nil || !strings.Contains(err.Error(), "demo-gpu-01") {
		t.Errorf("Generate with kubernetes version \"latest\": %v, want an error naming the node", err)
	}
}
