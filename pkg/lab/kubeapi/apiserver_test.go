package kubeapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// apiVIP is this package's API address: the 127.40.0.0/16 block belongs to
// the kubeapi tests. Port 0: a free one.
const apiVIP = "127.40.0.1"

// TestAPIServer runs the real kube-apiserver once and drives it with
// client-go through the front door, as talosc would. The API checks run in
// parallel; the faults (which touch every request) and the shutdown follow.
func TestAPIServer(t *testing.T) { //nolint:tparallel // "faults" and "shutdown" must run after the parallel "api" group

	t.Parallel()
	needHelper(t)
	ca, caKey := testCA(t)
	inj := labnet.NewInjector(labnet.Knobs{})
	var reported atomic.Pointer[string] // what /version reports; nil: the binary's
	begin := time.Now()
	srv, err := Start(t.Context(), Options{
		Address: apiVIP + ":0", CACertPEM: ca, CAKeyPEM: caKey, DataDir: t.TempDir(),
		PodTerminationDelay: 100 * time.Millisecond, Injector: inj, Logf: t.Logf,
		Version: func() string {
			if v := reported.Load(); v != nil {
				return *v
			}
			return ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	t.Logf("start to ready: %s; RSS at ready: %s; log: %s", time.Since(begin).Round(time.Millisecond), rss(srv.PID()), srv.LogPath())
	if host, _, _ := net.SplitHostPort(srv.Address()); host != apiVIP {
		t.Errorf("Address() = %s, want %s:PORT", srv.Address(), apiVIP)
	}

	certPEM, keyPEM, err := SignClientCert(ca, caKey, "admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	admin := certKubeconfig(t, srv.URL(), ca, certPEM, keyPEM)
	cs := kubernetes.NewForConfigOrDie(admin)

	t.Run("api", func(t *testing.T) {
		t.Run("version and identity", func(t *testing.T) {
			t.Parallel()
			checkVersionAndIdentity(t, cs)
			// The helper itself trusts the cluster CA: the same
			// kubeconfig works straight against it.
			direct := certKubeconfig(t, "https://"+srv.BackendAddress(), ca, certPEM, keyPEM)
			checkVersionAndIdentity(t, kubernetes.NewForConfigOrDie(direct))
		})
		t.Run("nodes", func(t *testing.T) { t.Parallel(); checkNodes(t, srv, cs) })
		t.Run("drain", func(t *testing.T) { t.Parallel(); checkDrain(t, srv, cs) })
		t.Run("delete node", func(t *testing.T) { t.Parallel(); checkDeleteNode(t, srv, cs) })
		t.Run("node config", func(t *testing.T) { t.Parallel(); checkNodeConfig(t, srv, cs) })
		t.Run("workload", func(t *testing.T) { t.Parallel(); checkWorkload(t, srv, cs) })
		t.Run("drain blocked", func(t *testing.T) { t.Parallel(); checkDrainBlocked(t, srv, cs) })
		t.Run("more addresses", func(t *testing.T) { t.Parallel(); checkMoreAddresses(t, srv, ca, certPEM, keyPEM) })
		t.Run("mirror pods", func(t *testing.T) { t.Parallel(); checkMirrorPods(t, srv, cs) })
		t.Run("etcd endpoint", func(t *testing.T) { t.Parallel(); checkEtcdEndpoint(t, srv, cs) })
	})
	t.Run("reported version", func(t *testing.T) { checkReportedVersion(t, srv, admin, &reported) })
	t.Run("faults", func(t *testing.T) { checkFaults(t, srv, inj) })
	t.Run("lost answers", func(t *testing.T) { checkLostAnswers(t, cs, inj) })
	t.Run("shutdown", func(t *testing.T) {
		start := time.Now()
		if err := srv.Close(); err != nil {
			t.Fatalf("Close() = %v", err)
		}
		t.Logf("shutdown took %s", time.Since(start).Round(time.Millisecond))
		select {
		case <-srv.Exited():
		default:
			t.Fatal("the apiserver is still running after Close")
		}
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(t.Context(), "tcp", srv.Address()); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Close", srv.Address())
		}
	})
}

func checkVersionAndIdentity(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != DefaultKubeletVersion || v.Major != "1" || v.Minor != "35" {
		t.Errorf("server version = %s (major %q minor %q), want %s", v.GitVersion, v.Major, v.Minor, DefaultKubeletVersion)
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u := review.Status.UserInfo
	if u.Username != "admin" || !slices.Contains(u.Groups, "system:masters") {
		t.Errorf("whoami = %s %v, want admin in system:masters", u.Username, u.Groups)
	}
}

func checkNodes(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	for i, name := range []string{"cp-1", "cp-2", "cp-3"} {
		n := Node{
			Name: name, Ready: true, KubeletVersion: "v1.35.4",
			Labels:    map[string]string{"node-role.kubernetes.io/control-plane": "", "lab.test/group": "nodes"},
			Taints:    []corev1.Taint{{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}},
			Addresses: []netip.Addr{netip.AddrFrom4([4]byte{127, 40, 1, byte(i + 1)})},
		}
		if err := srv.RegisterNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "lab.test/group=nodes,node-role.kubernetes.io/control-plane"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range list.Items {
		got = append(got, n.Name+" "+n.Status.NodeInfo.KubeletVersion+" "+internalIP(&n)+" "+n.Labels["kubernetes.io/hostname"]+" ready="+boolString(nodeReady(&n)))
	}
	want := []string{
		"cp-1 v1.35.4 127.40.1.1 cp-1 ready=true",
		"cp-2 v1.35.4 127.40.1.2 cp-2 ready=true",
		"cp-3 v1.35.4 127.40.1.3 cp-3 ready=true",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("nodes (-want +got):\n%s", d)
	}

	// Gone: every condition Unknown and the lifecycle controller's
	// unreachable taints.
	if err := srv.SetReady(ctx, "cp-2", false); err != nil {
		t.Fatal(err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "cp-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unknown := !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Status != corev1.ConditionUnknown })
	var gone []string
	for _, tn := range n.Spec.Taints {
		gone = append(gone, tn.ToString())
	}
	wantGone := []string{"node-role.kubernetes.io/control-plane:NoSchedule", "node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"}
	if !unknown || len(n.Status.Conditions) != 4 || !cmp.Equal(wantGone, gone) {
		t.Errorf("cp-2 after SetReady(false): conditions %+v taints %v, want 4 Unknown and %v", n.Status.Conditions, gone, wantGone)
	}
	if err := srv.SetReady(ctx, "cp-2", true); err != nil {
		t.Fatal(err)
	}
	if n, err = cs.CoreV1().Nodes().Get(ctx, "cp-2", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	wantTaints := []string{"node-role.kubernetes.io/control-plane:NoSchedule"}
	var taints []string
	for _, tn := range n.Spec.Taints {
		taints = append(taints, tn.ToString())
	}
	if !nodeReady(n) || !cmp.Equal(wantTaints, taints) {
		t.Errorf("cp-2 after SetReady(true): ready=%t taints %v, want ready and %v", nodeReady(n), taints, wantTaints)
	}
	// Re-registration (a reboot) keeps the node and updates it: the labels
	// Talos applied are the new configuration's.
	if err := srv.RegisterNode(ctx, Node{Name: "cp-3", Ready: true, KubeletVersion: "v1.35.5", Labels: map[string]string{"lab.test/upgraded": "yes"}}); err != nil {
		t.Fatal(err)
	}
	if n, err = cs.CoreV1().Nodes().Get(ctx, "cp-3", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, still := n.Labels["lab.test/group"]; n.Status.NodeInfo.KubeletVersion != "v1.35.5" || n.Labels["lab.test/upgraded"] != "yes" || still {
		t.Errorf("cp-3 after re-registration: kubelet %s labels %v", n.Status.NodeInfo.KubeletVersion, n.Labels)
	}
	if err := srv.SetReady(ctx, "no-such-node", true); !apierrors.IsNotFound(err) {
		t.Errorf("SetReady(no-such-node) = %v, want an error", err)
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// createPod creates a pod bound to node (the scheduler's work, done by the
// test) and waits until the lab kubelet reports it Running.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	pod, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod "+name+" Running", func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "", err
	})
	return pod
}

func createNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podGone(cs kubernetes.Interface, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	}
}

// checkDrain cordons a node and evicts its pod through policy/v1 with the
// default grace period: the lab kubelet finishes the deletion.
func checkDrain(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	if err := srv.RegisterNode(ctx, Node{Name: "worker-1", Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.40.2.1")}}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, cs, "drain")
	pod := createPod(t, cs, "drain", "web", "worker-1")

	patch := []byte(`{"spec":{"unschedulable":true}}`)
	node, err := cs.CoreV1().Nodes().Patch(ctx, "worker-1", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil || !node.Spec.Unschedulable {
		t.Fatalf("cordon: %v (unschedulable=%t)", err, node != nil && node.Spec.Unschedulable)
	}
	evicted := time.Now()
	err = cs.CoreV1().Pods("drain").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: "drain"}})
	if err != nil {
		t.Fatalf("evict: %v", err)
	}
	p, err := cs.CoreV1().Pods("drain").Get(ctx, pod.Name, metav1.GetOptions{})
	if err == nil && p.DeletionTimestamp == nil {
		t.Errorf("pod after eviction has no deletionTimestamp")
	}
	eventually(t, "evicted pod gone", podGone(cs, "drain", pod.Name))
	t.Logf("evicted pod gone after %s", time.Since(evicted))
	if took := time.Since(evicted); took < 100*time.Millisecond {
		t.Errorf("pod gone %s after eviction, before the 100ms termination delay", took)
	}
}

// checkDeleteNode: a Node a client deletes takes its pods with it.
func checkDeleteNode(t *testing.T, srv *Server, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	if err := srv.RegisterNode(ctx, Node{Name: "worker-2", Ready: true, Addresses: []netip.Addr{netip.MustParseAddr("127.40.2.2")}}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, cs, "gone")
	createPod(t, cs, "gone", "orphan", "worker-2")
	if err := cs.CoreV1().Nodes().Delete(ctx, "worker-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod of a deleted node gone (the pod garbage collector)", podGone(cs, "gone", "orphan"))
}

// checkFaults proves each labnet knob on the API address, with a token
// kubeconfig (Server.Kubeconfig), and that the recorder sees the calls.
func checkFaults(t *testing.T, srv *Server, inj *labnet.Injector) {
	t.Helper()
	kc, err := srv.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	version := func(timeout time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		start := time.Now()
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
		return time.Since(start), err
	}
	defer inj.Set(labnet.Knobs{})
	srv.Recorder().Reset()

	if _, err := version(5 * time.Second); err != nil {
		t.Fatalf("no faults: %v", err)
	}
	inj.Set(labnet.Knobs{Latency: 150 * time.Millisecond})
	if took, err := version(5 * time.Second); err != nil || took < 150*time.Millisecond {
		t.Errorf("latency 150ms: took %s, err %v", took, err)
	}
	inj.Set(labnet.Knobs{ErrorRate: 1, Seed: 7})
	if _, err := version(5 * time.Second); !apierrors.IsServiceUnavailable(err) {
		t.Errorf("error rate 1: err = %v, want 503", err)
	}
	inj.Set(labnet.Knobs{HangRate: 1, Seed: 7})
	if _, err := version(300 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hang rate 1: err = %v, want the client's deadline", err)
	}
	// Scripted: the 2nd node list fails with 500, the others work.
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: Service, Method: http.MethodGet, PathPrefix: "/api/v1/nodes", Nth: 2, Status: http.StatusInternalServerError}}})
	var errs []bool
	for range 3 {
		_, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		errs = append(errs, apierrors.IsInternalError(err))
	}
	if d := cmp.Diff([]bool{false, true, false}, errs); d != "" {
		t.Errorf("scripted fault on the 2nd list (-want +got):\n%s", d)
	}

	counts := srv.Recorder().Counts(func(c labnet.Call) string { return c.Method + " " + c.Path + " " + http.StatusText(c.Status) })
	want := map[string]int{"GET /version OK": 2, "GET /version Service Unavailable": 1, "GET /api/v1/nodes OK": 2, "GET /api/v1/nodes Internal Server Error": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("recorded %q %d times, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	if !slices.ContainsFunc(srv.Recorder().Calls(), func(c labnet.Call) bool { return c.Status == 499 }) {
		t.Errorf("the hung call is not recorded as 499: %v", counts)
	}
}

// rss reads a process's resident set size.
func rss(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
