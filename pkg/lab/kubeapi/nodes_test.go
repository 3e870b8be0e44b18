package kubeapi

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// checkNodeConfig: a live configuration change re-renders the labels and
// taints Talos owns (added, changed, removed) and the kubelet version,
// keeps the boot ID, and leaves what someone else set alone; a reboot
// (re-registration) makes a new boot ID.
func checkNodeConfig(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	n := Node{
		Name: "config-1", Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.40.3.1")},
		Labels: map[string]string{"lab.test/a": "1", "lab.test/b": "2"},
		Taints: []corev1.Taint{{Key: "lab.test/dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}},
	}
	if err := srv.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	// an operator's own label, taint, and a label Talos will want too
	patch := `{"metadata":{"labels":{"ops/team":"infra","lab.test/d":"theirs"}},"spec":{"taints":[` +
		`{"key":"lab.test/dedicated","value":"db","effect":"NoSchedule"},{"key":"ops/maintenance","effect":"NoSchedule"}]}}`
	if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	n.Labels = map[string]string{"lab.test/a": "1", "lab.test/c": "3", "lab.test/d": "ours"}
	n.Taints = []corev1.Taint{{Key: "lab.test/gpu", Effect: corev1.TaintEffectNoExecute}}
	n.KubeletVersion = "v1.36.0"
	if err := srv.UpdateNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	after, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range after.Labels {
		if k == "ops/team" || strings.HasPrefix(k, "lab.test/") {
			got[k] = v
		}
	}
	want := map[string]string{"ops/team": "infra", "lab.test/a": "1", "lab.test/c": "3", "lab.test/d": "theirs"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("labels after a live apply (-want +got):\n%s", d)
	}
	var taints []string
	for _, tn := range after.Spec.Taints {
		taints = append(taints, tn.ToString())
	}
	if d := cmp.Diff([]string{"ops/maintenance:NoSchedule", "lab.test/gpu:NoExecute"}, taints); d != "" {
		t.Errorf("taints after a live apply (-want +got):\n%s", d)
	}
	if a := after.Annotations["talos.dev/owned-labels"]; a != `["lab.test/a","lab.test/c"]` {
		t.Errorf("owned labels %s", a)
	}
	if after.Status.NodeInfo.KubeletVersion != "v1.36.0" || !nodeReady(after) || after.Status.NodeInfo.BootID != before.Status.NodeInfo.BootID {
		t.Errorf("after a live apply: kubelet %s ready %t boot ID %s (was %s)", after.Status.NodeInfo.KubeletVersion, nodeReady(after), after.Status.NodeInfo.BootID, before.Status.NodeInfo.BootID)
	}

	if err := srv.RegisterNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	rebooted, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil || rebooted.Status.NodeInfo.BootID == after.Status.NodeInfo.BootID {
		t.Errorf("a re-registration keeps the boot ID: %v", err)
	}
}
