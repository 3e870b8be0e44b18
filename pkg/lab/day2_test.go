package lab_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
)

// TestDay2NodeObjects follows a cluster's Node objects through what day 2
// does to its machines, as Talos and Kubernetes would show them: the
// workload on them, a live apply and a Talos 1.13 apply that reboots
// (labels and taints follow the configuration), a drain blocked by a
// budget until the drainBlocked knob is cleared, a reset and a deleted
// server (the Node stays, its kubelet gone, until a client deletes it).
func TestDay2NodeObjects(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	l, err := lab.Start(t.Context(), lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	control := httptest.NewServer(l.ControlHandler())
	t.Cleanup(control.Close)
	c := newOSCluster(t, l, "127.16.82.0/24", 1, 2)
	b := c.build(l)
	cp, w1, w2 := c.cfg.Hostnames()[0].Hostname, c.cfg.Hostnames()[1].Hostname, c.cfg.Hostnames()[2].Hostname
	d := &day2{t: t, b: b, control: control}

	// the workload: the agent everywhere, an app pod on the workers only
	d.waitPods(cp, "lab-agent-"+cp)
	d.waitPods(w1, "lab-agent-"+w1, "lab-app-"+w1)
	cpNode := d.node(cp)
	if _, ok := cpNode.Labels["node-role.kubernetes.io/control-plane"]; !ok || !hasTaint(cpNode, "node-role.kubernetes.io/control-plane:NoSchedule") {
		t.Errorf("control plane Node: labels %v taints %v", cpNode.Labels, cpNode.Spec.Taints)
	}

	// a live apply: the Node follows the configuration, the kubelet too
	d.apply(w1, "machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:v1.35.5\n  nodeLabels:\n    lab.test/pool: blue\n"+
		"  nodeTaints:\n    lab.test/dedicated: db:NoSchedule\n", machine.ApplyConfigurationRequest_NO_REBOOT)
	d.waitNode(w1, "the label, taint and kubelet of a live apply", func(n *corev1.Node) bool {
		return n.Labels["lab.test/pool"] == "blue" && hasTaint(n, "lab.test/dedicated=db:NoSchedule") && ready(*n) &&
			n.Status.NodeInfo.KubeletVersion == "v1.35.5"
	})
	boot := d.node(w1).Status.NodeInfo.BootID

	// an apply Talos 1.13 reboots for (machine.env), held down: NotReady
	// with the old labels, then Ready with the new ones after the boot
	d.knobs(w1, `{"rebootHangs": true}`)
	d.apply(w1, "machine:\n  env:\n    LAB: \"1\"\n  nodeLabels:\n    lab.test/pool: green\n  nodeTaints:\n    lab.test/dedicated: web:NoExecute\n",
		machine.ApplyConfigurationRequest_REBOOT) //nolint:staticcheck // Talos 1.13's answer
	d.waitNode(w1, "gone silent while it reboots", func(n *corev1.Node) bool {
		return readyStatus(n) == corev1.ConditionUnknown && hasTaint(n, "node.kubernetes.io/unreachable:NoSchedule")
	})
	if n := d.node(w1); n.Labels["lab.test/pool"] != "blue" {
		t.Errorf("labels of the rebooting node: %v", n.Labels)
	}
	d.knobs(w1, `{}`)
	d.waitNode(w1, "back with the new configuration", func(n *corev1.Node) bool {
		return ready(*n) && n.Labels["lab.test/pool"] == "green" && hasTaint(n, "lab.test/dedicated=web:NoExecute") &&
			!hasTaint(n, "lab.test/dedicated=db:NoSchedule") && n.Status.NodeInfo.BootID != boot
	})

	// a drain of w2 blocked by a budget until the knob is cleared
	d.knobs(w2, `{"drainBlocked": true}`)
	guarded := "lab-guarded-" + w2
	d.waitPods(w2, "lab-agent-"+w2, "lab-app-"+w2, guarded)
	if _, err := b.kube.CoreV1().Nodes().Patch(t.Context(), w2, types.StrategicMergePatchType, []byte(`{"spec":{"unschedulable":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.evict("lab-app-" + w2); err != nil {
		t.Fatalf("evicting the app pod: %v", err)
	}
	for range 3 {
		if err := d.evict(guarded); !apierrors.IsTooManyRequests(err) {
			t.Fatalf("evicting the guarded pod with drainBlocked: %v, want 429", err)
		}
	}
	d.knobs(w2, `{}`)
	if err := d.evict(guarded); err != nil {
		t.Fatalf("evicting the guarded pod once drainBlocked is cleared: %v", err)
	}
	d.waitPods(w2, "lab-agent-"+w2)

	// a reset leaves the Node, its kubelet gone; a client deletes it
	tc, nctx := c.talos(b.addrs[w2].String())
	if err := tc.ResetGeneric(nctx, &machine.ResetRequest{Graceful: true}); err != nil {
		t.Fatal(err)
	}
	d.waitNode(w2, "left behind by the reset, silent", func(n *corev1.Node) bool { return readyStatus(n) == corev1.ConditionUnknown })
	if err := b.kube.CoreV1().Nodes().Delete(t.Context(), w2, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted Node's pods gone", 20*time.Second, func() error {
		pods, err := b.kube.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + w2})
		if err == nil && len(pods.Items) > 0 {
			err = fmt.Errorf("%d pods left", len(pods.Items))
		}
		return err
	})

	// so does a deleted server
	b.destroy(w1)
	d.waitNode(w1, "left behind by its deleted server, silent", func(n *corev1.Node) bool { return readyStatus(n) == corev1.ConditionUnknown })
}

// day2 drives one build through day-2 changes.
type day2 struct {
	t       *testing.T
	b       *build
	control *httptest.Server
}

// node is the Node named host.
func (d *day2) node(host string) *corev1.Node {
	d.t.Helper()
	n, err := d.b.kube.CoreV1().Nodes().Get(d.t.Context(), host, metav1.GetOptions{})
	if err != nil {
		d.t.Fatal(err)
	}
	return n
}

// waitNode waits until the Node named host is what ok says.
func (d *day2) waitNode(host, what string, ok func(*corev1.Node) bool) {
	d.t.Helper()
	eventually(d.t, host+": "+what, 30*time.Second, func() error {
		n, err := d.b.kube.CoreV1().Nodes().Get(d.t.Context(), host, metav1.GetOptions{})
		if err == nil && !ok(n) {
			err = fmt.Errorf("labels %v taints %v conditions %v", n.Labels, n.Spec.Taints, n.Status.Conditions)
		}
		return err
	})
}

// waitPods waits until exactly the workload pods want run on host.
func (d *day2) waitPods(host string, want ...string) {
	d.t.Helper()
	slices.Sort(want)
	eventually(d.t, host+" runs "+strings.Join(want, " "), 30*time.Second, func() error {
		pods, err := d.b.kube.CoreV1().Pods(kubeapi.WorkloadNamespace).List(d.t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + host})
		if err != nil {
			return err
		}
		var got []string
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				got = append(got, p.Name)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("running %v", got)
		}
		return nil
	})
}

// evict evicts a workload pod through policy/v1, as a drain does.
func (d *day2) evict(pod string) error {
	return d.b.kube.CoreV1().Pods(kubeapi.WorkloadNamespace).EvictV1(d.t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: kubeapi.WorkloadNamespace}})
}

// knobs replaces the knobs of host's node through the control API.
func (d *day2) knobs(host, body string) {
	d.t.Helper()
	req, _ := http.NewRequestWithContext(d.t.Context(), http.MethodPut, d.control.URL+"/nodes/"+d.b.addrs[host].String()+"/knobs", strings.NewReader(body))
	resp, err := d.control.Client().Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		d.t.Fatalf("PUT the knobs %s of %s: %s", body, host, resp.Status)
	}
}

// apply patches host's running configuration (read over COSI, as
// upgrade-k8s does) and applies it in mode.
func (d *day2) apply(host, patch string, mode machine.ApplyConfigurationRequest_Mode) {
	d.t.Helper()
	tc, nctx := d.b.c.talos(d.b.addrs[host].String())
	ctx, cancel := context.WithTimeout(nctx, 10*time.Second)
	defer cancel()
	mc, err := safe.StateGetByID[*configres.MachineConfig](ctx, tc.COSI, configres.ActiveID)
	if err != nil {
		d.t.Fatal(err)
	}
	p, err := configpatcher.LoadPatch([]byte(patch))
	if err != nil {
		d.t.Fatal(err)
	}
	out, err := configpatcher.Apply(configpatcher.WithConfig(mc.Provider()), []configpatcher.Patch{p})
	if err != nil {
		d.t.Fatal(err)
	}
	data, err := out.Bytes()
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := tc.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: data, Mode: machine.ApplyConfigurationRequest_AUTO})
	if err != nil {
		d.t.Fatal(err)
	}
	if got := resp.GetMessages()[0].GetMode(); got != mode {
		d.t.Fatalf("apply to %s: mode %s, want %s", host, got, mode)
	}
}

// readyStatus is n's Ready condition.
func readyStatus(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// hasTaint reports whether n carries the taint written as kubectl does
// (key[=value]:effect).
func hasTaint(n *corev1.Node, taint string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.ToString() == taint })
}
