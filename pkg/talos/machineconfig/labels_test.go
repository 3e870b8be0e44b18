package machineconfig_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

func TestNodeLabels(t *testing.T) {
	t.Parallel()
	cluster := &config.Cluster{
		Name:         "demo",
		Tags:         config.Labels{"team": "platform", "owner": "research computing", "ncsa/pool": "overridden by a tag"},
		ControlPlane: config.Pool{Name: "controlplane", Tags: config.Labels{"tier": "control", "team": "infra"}},
		Workers: config.Pools{
			{Name: "gpu", Tags: config.Labels{"accelerator": "nvidia a100", "ncsa/role": "gpu worker"}},
			{Name: "plain"},
		},
	}
	cases := []struct {
		name     string
		machine  config.Machine
		provider map[string]string
		want     map[string]string
	}{
		{
			"control plane: pool tags over cluster tags over defaults",
			config.Machine{Role: config.RoleControlPlane, Pool: "controlplane"},
			nil,
			map[string]string{
				"ncsa/role": "controlplane", "ncsa/pool": "overridden_by_a_tag",
				"team": "infra", "owner": "research_computing", "tier": "control",
			},
		},
		{
			"worker pool tags override the role default; spaces become _",
			config.Machine{Role: config.RoleWorker, Pool: "gpu"},
			map[string]string{"ncsa/project": "hpc research"},
			map[string]string{
				"ncsa/role": "gpu_worker", "ncsa/pool": "overridden_by_a_tag", "ncsa/project": "hpc_research",
				"team": "platform", "owner": "research_computing", "accelerator": "nvidia_a100",
			},
		},
		{
			"pool without tags; provider default under cluster tags",
			config.Machine{Role: config.RoleWorker, Pool: "plain"},
			map[string]string{"ncsa/project": "p", "team": "from provider"},
			map[string]string{
				"ncsa/role": "worker", "ncsa/pool": "overridden_by_a_tag", "ncsa/project": "p",
				"team": "platform", "owner": "research_computing",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := machineconfig.NodeLabels(cluster, tc.machine, tc.provider)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("labels (-want +got):\n%s", d)
			}
		})
	}
}

// TestGenerate_LabelsInBothLayouts checks where the labels land: v1alpha1
// machine.nodeLabels up to 1.13, KubeNodeConfig from 1.14.
func TestGenerate_LabelsInBothLayouts(t *testing.T) {
	t.Parallel()
	want := map[string]any{
		"ncsa/role": "worker", "ncsa/pool": "gpu", "ncsa/project": "hpc_research",
		"team": "ml", "owner": "research_computing", "accelerator": "nvidia_a100",
	}
	for _, talos := range []string{talos113, talos114} {
		t.Run(talos, func(t *testing.T) {
			t.Parallel()
			in := openstackInput(t, openstackYAML)
			docs := documents(t, mustGenerate(t, in, node(t, in.Cluster, "demo-gpu-01", talos)).Bytes())
			var got any
			if talos == talos113 {
				got = dig(legacyDoc(t, docs), "machine", "nodeLabels")
				if len(docsOf(docs, "KubeNodeConfig")) != 0 {
					t.Errorf("a v1.13 config has a KubeNodeConfig document")
				}
			} else {
				kn := docsOf(docs, "KubeNodeConfig")
				if len(kn) != 1 {
					t.Fatalf("%d KubeNodeConfig documents, want 1", len(kn))
				}
				got = kn[0]["labels"]
				if dig(legacyDoc(t, docs), "machine", "nodeLabels") != nil {
					t.Errorf("a v1.14 config sets machine.nodeLabels")
				}
				if sub := dig(kn[0], "nodeIP", "validSubnets"); cmp.Diff([]any{"192.168.0.0/21"}, sub) != "" {
					t.Errorf("nodeIP.validSubnets = %v, want [192.168.0.0/21]", sub)
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("node labels (-want +got):\n%s", d)
			}
		})
	}
}
