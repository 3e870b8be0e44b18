package lab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/google/go-cmp/cmp"
	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/resources/k8s"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/talosc/talosc/pkg/lab"
)

// upgradePatch moves a node's control plane (on a control plane) and its
// kubelet to Kubernetes v, as talosctl upgrade-k8s patches a machine
// configuration.
func upgradePatch(v string) string {
	return fmt.Sprintf("machine:\n  kubelet:\n    image: ghcr.io/siderolabs/kubelet:%[1]s\ncluster:\n"+
		"  apiServer:\n    image: registry.k8s.io/kube-apiserver:%[1]s\n"+
		"  controllerManager:\n    image: registry.k8s.io/kube-controller-manager:%[1]s\n"+
		"  scheduler:\n    image: registry.k8s.io/kube-scheduler:%[1]s\n", v)
}

// TestKubernetesUpgradeReporting follows a Kubernetes upgrade done by live
// configuration applies, as a real cluster reports it: every control
// plane's mirror pods (with Talos's config-version annotation) run its
// configured images and are replaced when they change; a Node's
// kubeletVersion follows its kubelet image, the Node staying Ready;
// /version follows the apiserver of the control plane holding the API's
// VIP; the Kubernetes conditions of Talos's health check pass (kube-proxy
// and CoreDNS SKIP until their bootstrap manifests are applied, then OK),
// and fail on a cordoned node and on the Node a reset control plane leaves
// behind (its mirror pods gone).
func TestKubernetesUpgradeReporting(t *testing.T) {
	t.Parallel()
	needKubeAPIServer(t)
	l, err := lab.Start(t.Context(), lab.Options{Provider: lab.ProviderOpenStack, NodesBoot: 10 * time.Millisecond, VIPFailover: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	control := httptest.NewServer(l.ControlHandler())
	t.Cleanup(control.Close)
	c := newOSCluster(t, l, "127.16.84.0/24", 2, 1)
	b := c.build(l)
	d := &day2{t: t, b: b, control: control}
	hosts := c.cfg.Hostnames()
	cps := []string{hosts[0].Hostname, hosts[1].Hostname}
	worker := hosts[2].Hostname
	holder := b.host(vipOwner(t, l, c))
	other := cps[0]
	if other == holder {
		other = cps[1]
	}
	before := map[string]map[string]types.UID{}
	for _, cp := range cps {
		before[cp] = waitMirrorPods(t, b, cp, "v1.35.4")
	}
	text := health(t, c, b, 20*time.Second, "")
	for _, skip := range []string{"kube-proxy to report ready", "coredns to report ready"} {
		if !strings.Contains(text, "waiting for "+skip+": SKIP") {
			t.Errorf("health check without bootstrap manifests lacks %q: SKIP:\n%s", skip, text)
		}
	}
	checkVersion(t, b, "v1.35.4")

	// a control plane that does not hold the VIP moves on: its mirror
	// pods are replaced, its kubelet follows; /version does not
	d.apply(other, upgradePatch("v1.36.0"), machine.ApplyConfigurationRequest_NO_REBOOT)
	after := waitMirrorPods(t, b, other, "v1.36.0")
	for name, uid := range before[other] {
		if after[name] == uid {
			t.Errorf("mirror pod %s was not replaced", name)
		}
	}
	waitKubelet(d, other, "v1.36.0")
	checkVersion(t, b, "v1.35.4")

	// the VIP holder moves further: /version follows it, not the lowest
	d.apply(holder, upgradePatch("v1.36.1"), machine.ApplyConfigurationRequest_NO_REBOOT)
	waitMirrorPods(t, b, holder, "v1.36.1")
	waitKubelet(d, holder, "v1.36.1")
	checkVersion(t, b, "v1.36.1")
	d.apply(other, upgradePatch("v1.36.1"), machine.ApplyConfigurationRequest_NO_REBOOT)
	waitMirrorPods(t, b, other, "v1.36.1")
	d.apply(worker, upgradePatch("v1.36.1"), machine.ApplyConfigurationRequest_NO_REBOOT)
	waitKubelet(d, worker, "v1.36.1")
	if pods := mirrorPodsOn(t, b, worker); len(pods) > 0 {
		t.Errorf("the worker runs mirror pods %v", slices.Collect(maps.Keys(pods)))
	}
	health(t, c, b, 20*time.Second, "")

	// a cordoned node fails the health check until it is uncordoned
	cordon := func(on bool) {
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, on)
		if _, err := b.kube.CoreV1().Nodes().Patch(t.Context(), worker, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	health(t, c, b, time.Second, "waiting for all k8s nodes to report schedulable: some nodes are not schedulable: ["+worker+"]")
	cordon(false)
	health(t, c, b, 20*time.Second, "")

	// a control plane reset: its mirror pods go, its Node stays behind,
	// silent, and fails the check of the cluster without it until a
	// client deletes it
	tc, nctx := c.talos(b.addrs[other].String())
	if err := tc.ResetGeneric(nctx, &machine.ResetRequest{Graceful: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mirror pods of the reset control plane gone", 20*time.Second, func() error {
		if pods := mirrorPodsOn(t, b, other); len(pods) > 0 {
			return fmt.Errorf("mirror pods left: %v", slices.Collect(maps.Keys(pods)))
		}
		return nil
	})
	d.waitNode(other, "left behind, silent", func(n *corev1.Node) bool { return readyStatus(n) == corev1.ConditionUnknown })
	health(t, c, b, time.Second, fmt.Sprintf("waiting for all k8s nodes to report: unexpected nodes with IPs [%q]", b.addrs[other]), other)
	if err := b.kube.CoreV1().Nodes().Delete(t.Context(), other, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	health(t, c, b, 20*time.Second, "", other)

	// the bootstrap manifests the control plane renders, applied as
	// Talos's manifest sync applies them: kube-proxy and CoreDNS run
	applyBootstrapManifests(t, c, b, holder)
	text = health(t, c, b, 20*time.Second, "", other)
	for _, ok := range []string{"kube-proxy to report ready", "coredns to report ready"} {
		if !strings.Contains(text, "waiting for "+ok+": OK") {
			t.Errorf("health check with bootstrap manifests lacks %q: OK:\n%s", ok, text)
		}
	}
}

// applyBootstrapManifests server-side applies the DaemonSets and
// Deployments of host's Manifest resources (field manager "talos",
// forced), as upgrade-k8s's manifest sync does.
func applyBootstrapManifests(t *testing.T, c *osCluster, b *build, host string) {
	t.Helper()
	tc, nctx := c.talos(b.addrs[host].String())
	list, err := safe.StateListAll[*k8s.Manifest](nctx, tc.COSI)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for m := range list.All() {
		for _, item := range m.TypedSpec().Items {
			resource := map[string]string{"DaemonSet": "daemonsets", "Deployment": "deployments"}[fmt.Sprint(item.Object["kind"])]
			if resource == "" {
				continue
			}
			meta, _ := item.Object["metadata"].(map[string]any)
			body, err := json.Marshal(item.Object)
			if err != nil {
				t.Fatal(err)
			}
			err = b.kube.AppsV1().RESTClient().Patch(types.ApplyPatchType).Namespace(fmt.Sprint(meta["namespace"])).Resource(resource).Name(fmt.Sprint(meta["name"])).
				Param("fieldManager", "talos").Param("force", "true").Body(body).Do(t.Context()).Error()
			if err != nil {
				t.Fatalf("apply %s %v: %v", item.Object["kind"], meta["name"], err)
			}
			applied++
		}
	}
	if applied != 2 {
		t.Fatalf("applied %d workloads, want kube-proxy's and CoreDNS's", applied)
	}
}

// vipOwner is the control plane holding c's API VIP, once one does.
func vipOwner(t *testing.T, l *lab.Lab, c *osCluster) netip.Addr {
	t.Helper()
	var owner netip.Addr
	eventually(t, "an owner of the API VIP", 20*time.Second, func() error {
		for _, v := range l.Status().VIPs {
			if v.Cluster == c.cfg.Name && v.Address.String() == c.vip && v.Owner.IsValid() {
				owner = v.Owner
				return nil
			}
		}
		return fmt.Errorf("VIPs %+v", l.Status().VIPs)
	})
	return owner
}

// checkVersion asserts the API's /version (through its VIP) reports want.
func checkVersion(t *testing.T, b *build, want string) {
	t.Helper()
	v, err := b.kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != want || v.Minor != strings.Split(want, ".")[1] {
		t.Errorf("/version: %s (minor %s), want %s", v.GitVersion, v.Minor, want)
	}
}

// mirrorPodsOn returns the mirror pods on host by name.
func mirrorPodsOn(t *testing.T, b *build, host string) map[string]corev1.Pod {
	t.Helper()
	list, err := b.kube.CoreV1().Pods(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{FieldSelector: "spec.nodeName=" + host})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
			out[p.Name] = p
		}
	}
	return out
}

// waitMirrorPods waits until host's mirror pods are its control plane's
// components at tag, Running and Ready on its address with a config
// version, and returns their UIDs by name.
func waitMirrorPods(t *testing.T, b *build, host, tag string) map[string]types.UID {
	t.Helper()
	var uids map[string]types.UID
	eventually(t, host+"'s mirror pods at "+tag, 30*time.Second, func() error {
		got, want := map[string]string{}, map[string]string{}
		uids = map[string]types.UID{}
		for name, p := range mirrorPodsOn(t, b, host) {
			ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			})
			got[name] = fmt.Sprintf("%s on %s ready=%t versioned=%t", p.Spec.Containers[0].Image, p.Status.HostIP, ready, p.Annotations["talos.dev/config-version"] != "")
			uids[name] = p.UID
		}
		for _, component := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			want[component+"-"+host] = fmt.Sprintf("registry.k8s.io/%s:%s on %s ready=true versioned=true", component, tag, b.addrs[host])
		}
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("(-want +got):\n%s", diff)
		}
		return nil
	})
	return uids
}

// waitKubelet waits until host's Node reports kubelet v and is Ready.
func waitKubelet(d *day2, host, v string) {
	d.t.Helper()
	d.waitNode(host, "kubelet "+v+", Ready", func(n *corev1.Node) bool {
		return n.Status.NodeInfo.KubeletVersion == v && ready(*n)
	})
}

// health runs Talos's server-side health check on a control plane for the
// build's machines but those left out: with want "", it must pass with
// every Kubernetes condition OK (or SKIP: kube-proxy, CoreDNS); else it
// must fail within wait, having said want. It returns what the check said.
func health(t *testing.T, c *osCluster, b *build, wait time.Duration, want string, leftOut ...string) string {
	t.Helper()
	info := &clusterapi.ClusterInfo{}
	for h, a := range b.addrs {
		switch {
		case slices.Contains(leftOut, h):
		case slices.Contains(b.controlPlanes, a):
			info.ControlPlaneNodes = append(info.ControlPlaneNodes, a.String())
		default:
			info.WorkerNodes = append(info.WorkerNodes, a.String())
		}
	}
	tc, nctx := c.talos(info.ControlPlaneNodes[0])
	msgs, err := healthLines(nctx, tc, wait, info)
	text := strings.Join(msgs, "\n")
	if want != "" {
		if err == nil || !strings.Contains(text, want) {
			t.Fatalf("health check: %v, want a failure saying %q:\n%s", err, want, text)
		}
		return text
	}
	if err != nil {
		t.Fatalf("health check: %v\n%s", err, text)
	}
	for _, ok := range []string{"all k8s nodes to report", "all control plane static pods to be running", "all control plane components to be ready", "all k8s nodes to report ready", "all k8s nodes to report schedulable"} {
		if !strings.Contains(text, "waiting for "+ok+": OK") {
			t.Errorf("health check lacks %q: OK:\n%s", ok, text)
		}
	}
	return text
}

// healthLines streams a health check's progress lines.
func healthLines(ctx context.Context, tc *client.Client, wait time.Duration, info *clusterapi.ClusterInfo) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	stream, err := tc.ClusterHealthCheck(ctx, wait, info)
	if err != nil {
		return nil, err
	}
	var msgs []string
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return msgs, nil
		}
		if err != nil {
			return msgs, err
		}
		msgs = append(msgs, m.GetMessage())
	}
}
