package nodes

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase/nodes/kubeupgrade"
	"github.com/talosc/talosc/pkg/talos/machineconfig"
)

var (
	kubeCPs     = []string{"t-controlplane-01", "t-controlplane-02", "t-controlplane-03"}
	kubeWorkers = []string{"t-worker-01", "t-worker-02"}
)

// wantStep is one step's applies in converge order ("apply <host>
// <component>=<version>", one component each) and its manifests, leaving
// out the applies in done ("<host> <component>").
func wantStep(to string, done ...string) []string {
	var out []string
	add := func(host string, c kubeupgrade.Component) {
		if !slices.Contains(done, host+" "+string(c)) {
			out = append(out, fmt.Sprintf("apply %s %s=%s", host, c, to))
		}
	}
	for _, c := range []kubeupgrade.Component{kubeupgrade.APIServer, kubeupgrade.ControllerManager, kubeupgrade.Scheduler, kubeupgrade.Proxy} {
		for _, h := range kubeCPs {
			add(h, c)
		}
	}
	for _, h := range append(slices.Clone(kubeCPs), kubeWorkers...) {
		add(h, kubeupgrade.Kubelet)
	}
	return append(out, "talos ConfigMap kube-system/coredns", "talos DaemonSet kube-system/kube-proxy")
}

// wantPlan is one step's plan entries, in the same order.
func wantPlan(from, to string, number, of int, done ...string) []string {
	step := fmt.Sprintf("(step %d of %d)", number, of)
	out := []string{fmt.Sprintf("create kube:images %s", to)}
	add := func(kind, name, host string, c kubeupgrade.Component) {
		if !slices.Contains(done, host+" "+string(c)) {
			out = append(out, fmt.Sprintf("update %s %s %s -> %s %s", kind, name, from, to, step))
		}
	}
	for _, c := range []kubeupgrade.Component{kubeupgrade.APIServer, kubeupgrade.ControllerManager, kubeupgrade.Scheduler, kubeupgrade.Proxy} {
		for _, h := range kubeCPs {
			add(c.Kind(), h, h, c)
		}
	}
	for _, h := range kubeCPs {
		add(KindKubelet, "controlplane/"+h, h, kubeupgrade.Kubelet)
	}
	for _, h := range kubeWorkers {
		add(KindKubelet, "worker/"+h, h, kubeupgrade.Kubelet)
	}
	return append(out, fmt.Sprintf("update kube:manifests bootstrap manifests at %s, from t-controlplane-01 %s", to, step))
}

// planLines are the recorded changes, the pulls' details left out.
func planLines(r *run) []string {
	var out []string
	for _, c := range r.plan.Changes() {
		line := fmt.Sprintf("%s %s %s", c.Action, c.Kind, c.Name)
		if c.Kind != KindKubeImages {
			line += " " + c.Detail
		}
		out = append(out, line)
	}
	return out
}

// allAt reports that every component of every node runs version.
func allAt(t *testing.T, f *kubeFake, version string) {
	t.Helper()
	for host, tags := range f.runningVersions() {
		want := 5
		if strings.Contains(host, "worker") {
			want = 1
		}
		if len(tags) != want {
			t.Errorf("%s runs %v, want %d components", host, tags, want)
		}
		for c, v := range tags {
			if v != version {
				t.Errorf("%s runs %s %s, want %s", host, c, v, version)
			}
		}
	}
}

// A two-minor jump is two steps, the intermediate minor at its newest
// patch; each change is one apply of one component, static pods one
// control plane at a time, then kube-proxy, then the kubelets, then the
// manifests (ConfigMaps first); the plan lists the same order.
func TestKubernetesUpgradeTwoMinors(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, false, "v1.36.1", at("v1.34.3"))
	if err := r.upgradeKubernetes(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(append(wantStep("v1.35.4"), wantStep("v1.36.1")...), f.log); d != "" {
		t.Errorf("applies (-want +got):\n%s", d)
	}
	if d := cmp.Diff(append(wantPlan("v1.34.3", "v1.35.4", 1, 2), wantPlan("v1.35.4", "v1.36.1", 2, 2)...), planLines(r)); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
	allAt(t, f, "v1.36.1")
	// Per step: three control-plane images on each control plane and a
	// kubelet on every node.
	if len(f.pulls) != 2*(3*3+5) || !slices.Contains(f.pulls, "t-worker-02 ghcr.io/siderolabs/kubelet:v1.35.4 true") ||
		!slices.Contains(f.pulls, "t-controlplane-03 registry.k8s.io/kube-scheduler:v1.36.1 false") {
		t.Errorf("pulls: %v", f.pulls)
	}
}

// A run killed after cp-01's API server reached the step resumes there:
// nothing already at the step is applied again.
func TestKubernetesUpgradeResumesAPartialStep(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, false, "v1.36.1", func(m config.Machine) machineconfig.KubernetesImages {
		images := at("v1.34.3")(m)
		if m.Hostname == "t-controlplane-01" {
			images.APIServer = machineconfig.DefaultImages("v1.35.4", true).APIServer
		}
		return images
	})
	if err := r.upgradeKubernetes(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := "t-controlplane-01 kube-apiserver"
	if d := cmp.Diff(append(wantStep("v1.35.4", done), wantStep("v1.36.1")...), f.log); d != "" {
		t.Errorf("applies (-want +got):\n%s", d)
	}
	if d := cmp.Diff(append(wantPlan("v1.34.3", "v1.35.4", 1, 2, done), wantPlan("v1.35.4", "v1.36.1", 2, 2)...), planLines(r)); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
	allAt(t, f, "v1.36.1")
}

func TestKubernetesUpgradePatchOnly(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, false, "v1.36.1", at("v1.36.0"))
	if err := r.upgradeKubernetes(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantStep("v1.36.1"), f.log); d != "" {
		t.Errorf("applies (-want +got):\n%s", d)
	}
	if d := cmp.Diff(wantPlan("v1.36.0", "v1.36.1", 1, 1), planLines(r)); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
}

// A plan records every change of every step and mutates nothing.
func TestKubernetesUpgradePlanOnlyRecords(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, true, "v1.36.1", at("v1.34.3"))
	if err := r.upgradeKubernetes(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.log) != 0 || len(f.pulls) != 0 {
		t.Errorf("a plan applied %v and pulled %v", f.log, f.pulls)
	}
	if d := cmp.Diff(append(wantPlan("v1.34.3", "v1.35.4", 1, 2), wantPlan("v1.35.4", "v1.36.1", 2, 2)...), planLines(r)); d != "" {
		t.Errorf("recorded (-want +got):\n%s", d)
	}
}

// Nothing to do at the target: nothing recorded, nothing applied.
func TestKubernetesUpgradeAtTarget(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, false, "v1.36.1", at("v1.36.1"))
	if err := r.upgradeKubernetes(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.log) != 0 || len(r.plan.Changes()) != 0 {
		t.Errorf("applied %v, recorded %v", f.log, r.plan.Changes())
	}
}

// An unknown running version refuses the upgrade before anything
// changes (I-13), as do an API that does not answer steadily (I-R9) and
// a pin below what a component runs (I-12).
func TestKubernetesUpgradeRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		target  string
		initial func(config.Machine) machineconfig.KubernetesImages
		fault   func(*run, *kubeFake)
		want    string
	}{
		{
			"API version unreadable", "v1.36.1", at("v1.34.3"),
			func(_ *run, f *kubeFake) { f.versionErr = errors.New("server version: timed out") },
			"could not determine the running cluster's kubernetes version while the kube-api is up; refusing",
		},
		{
			"API unstable", "v1.36.1", at("v1.34.3"),
			func(_ *run, f *kubeFake) { f.unstable = true },
			"kube-api did not stabilize before k8s upgrade",
		},
		{
			"a control plane that is no Kubernetes node", "v1.36.1", at("v1.34.3"),
			func(r *run, _ *kubeFake) {
				r.obs.nodes = slices.DeleteFunc(r.obs.nodes, func(n kube.Node) bool { return n.Name == "t-controlplane-03" })
			},
			"control plane(s) t-controlplane-03 not visible through kubeconfig",
		},
		{
			"a kubelet tag that is no version", "v1.36.1", at("v1.34.3"),
			func(_ *run, f *kubeFake) {
				n := f.nodes["127.0.0.14"]
				n.config = bytes.ReplaceAll(n.config, []byte("kubelet:v1.34.3"), []byte("kubelet:latest"))
			},
			"the running kubelet version of t-worker-02 is unknown",
		},
		{
			"a component above the pin", "v1.35.4",
			func(m config.Machine) machineconfig.KubernetesImages {
				images := at("v1.35.4")(m)
				if m.Hostname == "t-controlplane-02" {
					images.Scheduler = machineconfig.DefaultImages("v1.36.1", true).Scheduler
				}
				return images
			},
			nil, "t-controlplane-02 runs kube-scheduler v1.36.1: kubernetes.version v1.35.4 is older than the running v1.36.1; kubernetes downgrades are not supported",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, f := newKubeFake(t, false, tc.target, tc.initial)
			if tc.fault != nil {
				tc.fault(r, f)
			}
			err := r.upgradeKubernetes(t.Context())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
			if len(f.log) != 0 || len(f.pulls) != 0 || len(r.plan.Changes()) != 0 {
				t.Errorf("a refused upgrade applied %v, pulled %v, recorded %v", f.log, f.pulls, r.plan.Changes())
			}
		})
	}
}

// A mirror pod that never turns Ready stops the upgrade before the next
// control plane is touched.
func TestKubernetesUpgradeStopsAtAPodNeverReady(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, false, "v1.36.1", at("v1.35.4"))
	f.neverReady = "t-controlplane-02 kube-apiserver"
	err := r.upgradeKubernetes(t.Context())
	if err == nil || !strings.Contains(err.Error(), "kube-apiserver on t-controlplane-02 is not upgraded after") || !strings.Contains(err.Error(), "its mirror pod is not Ready") {
		t.Fatalf("err = %v", err)
	}
	want := []string{"apply t-controlplane-01 kube-apiserver=v1.36.1", "apply t-controlplane-02 kube-apiserver=v1.36.1"}
	if d := cmp.Diff(want, f.log); d != "" {
		t.Errorf("applies (-want +got):\n%s", d)
	}
}

// go-kubernetes' checks of the path run before the step's first change: a
// kubelet flag the step's minor removed stops it with their table.
func TestKubernetesUpgradeChecksFirst(t *testing.T) {
	t.Parallel()
	r, f := newKubeFake(t, false, "v1.35.4", at("v1.34.3"))
	spec := k8s.NewKubeletSpec(k8s.NamespaceName, k8s.KubeletID)
	spec.TypedSpec().Args = []string{"--pod-infra-container-image=registry.k8s.io/pause:3.10"}
	if err := f.cosi.Create(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	err := r.upgradeKubernetes(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the checks of the upgrade path 1.34->1.35 failed") || !strings.Contains(err.Error(), "pod-infra-container-image") {
		t.Fatalf("err = %v", err)
	}
	if len(f.log) != 0 || len(f.pulls) != 0 {
		t.Errorf("applied %v, pulled %v before the checks", f.log, f.pulls)
	}
}

// A new machine boots at the pin; an existing one is generated at the
// images it runs, which its configuration then names.
func TestGenerateAtRunningImages(t *testing.T) {
	t.Parallel()
	r, _ := newKubeFake(t, false, "v1.36.1", at("v1.34.3"))
	input, _, err := r.configInput()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []config.Machine{r.desired[0], r.desired[3]} {
		cp := m.Role == config.RoleControlPlane
		running := machineconfig.DefaultImages("v1.34.3", cp)
		running.Kubelet = machineconfig.DefaultImages("v1.35.4", cp).Kubelet
		for _, tc := range []struct {
			images, want machineconfig.KubernetesImages
		}{
			{machineconfig.KubernetesImages{}, machineconfig.DefaultImages("v1.36.1", cp)},
			{running, running},
		} {
			mc, err := r.generate(input, m, tc.images)
			if err != nil {
				t.Fatal(err)
			}
			got, err := machineconfig.RunningImages(mc.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("%s generated with %+v names %+v, want %+v", m.Hostname, tc.images, got, tc.want)
			}
		}
	}
}
