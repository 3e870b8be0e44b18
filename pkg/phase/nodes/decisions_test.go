package nodes

import (
	"strings"
	"testing"
)

func TestPlanRemoval(t *testing.T) {
	t.Parallel()
	type want struct{ drain, reset, deleteNode, deleteMachine, etcdEvidence bool }
	for _, tc := range []struct {
		name    string
		f       removalFacts
		want    want
		refused string
	}{
		{
			"worker with address and Ready node: drain, reset, delete both (I-S3)",
			removalFacts{host: "w", machine: true, address: "127.0.0.5", kube: kubeReady},
			want{drain: true, reset: true, deleteNode: true, deleteMachine: true},
			"",
		},
		{
			"NotReady worker with address is still drained and reset",
			removalFacts{host: "w", machine: true, address: "127.0.0.5", kube: kubeNotReady},
			want{drain: true, reset: true, deleteNode: true, deleteMachine: true},
			"",
		},
		{
			"unknown Node state with address: the drain decides (I-S4)",
			removalFacts{host: "w", machine: true, address: "127.0.0.5", kube: kubeUnknown},
			want{drain: true, reset: true, deleteNode: true, deleteMachine: true},
			"",
		},
		{
			"inventory-only, addressed: reset and delete without drain (I-S7)",
			removalFacts{host: "w", machine: true, address: "127.0.0.5", kube: kubeAbsent},
			want{reset: true, deleteMachine: true},
			"",
		},
		{
			"inventory-only, no address: delete only (I-S7)",
			removalFacts{host: "w", machine: true, kube: kubeAbsent},
			want{deleteMachine: true},
			"",
		},
		{
			"no address, NotReady worker: delete without reset (I-S6)",
			removalFacts{host: "w", machine: true, kube: kubeNotReady},
			want{deleteNode: true, deleteMachine: true},
			"",
		},
		{
			"no address, Ready node: refused (I-S5)",
			removalFacts{host: "w", machine: true, kube: kubeReady},
			want{},
			"no address for w but node is Ready in k8s; aborting",
		},
		{
			"no address, unknown state: refused (I-S5)",
			removalFacts{host: "w", machine: true, kube: kubeUnknown},
			want{},
			"no address for w but node is unknown in k8s",
		},
		{
			"addressless NotReady control plane: only on etcd evidence (I-S9)",
			removalFacts{host: "cp", controlPlane: true, machine: true, kube: kubeNotReady},
			want{deleteNode: true, deleteMachine: true, etcdEvidence: true},
			"",
		},
		{
			"a Node without a machine: drained, reset, Node deleted, nothing for the provider",
			removalFacts{host: "gone", address: "127.0.0.9", kube: kubeReady},
			want{drain: true, reset: true, deleteNode: true},
			"",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := planRemoval(tc.f)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("err = %v, want one containing %q", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := (want{got.drain, got.reset, got.deleteNode, got.deleteMachine, got.etcdEvidence}); g != tc.want {
				t.Errorf("got %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestNeverRebootsOnApply(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"v1.14.1": true, "v1.14.0": true, "v1.15.0": true,
		"v1.13.9": false, "v1.12.0": false,
		"": false, "garbage": false, // unknown: ask the node
	} {
		if got := neverRebootsOnApply(v); got != want {
			t.Errorf("neverRebootsOnApply(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestApplyDetail(t *testing.T) {
	t.Parallel()
	if got := applyDetail("v1.14.1", false, ""); !strings.Contains(got, "applies live on Talos v1.14.1") {
		t.Errorf("live: %q", got)
	}
	got := applyDetail("v1.13.8", true, "Applied configuration with a reboot: this config change can't be applied in immediate mode\ndiff:\n...")
	if !strings.Contains(got, "REBOOTS the node on Talos v1.13.8 (Applied configuration with a reboot") || strings.Contains(got, "diff:") {
		t.Errorf("reboot: %q", got)
	}
	// A node's dry run: the summary header and the mode line carry no reason.
	got = applyDetail("v1.13.8", true, "Dry run summary:\nApplied configuration with a reboot (skipped in dry-run).\nConfig diff:\n\n+ env")
	if want := "REBOOTS the node on Talos v1.13.8 (the change cannot be applied in immediate mode)"; !strings.HasSuffix(got, want) {
		t.Errorf("dry run: %q, want the suffix %q", got, want)
	}
}
