package kube_test

import (
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/talos/identity"
)

const (
	// apiVIP is this package's API address (127.62.0.0/16 belongs to the
	// kube tests); port 0: a free one.
	apiVIP    = "127.62.0.1"
	nodesPath = "/api/v1/nodes"
)

// TestKube runs the real kube-apiserver once and drives it through the
// package, as the nodes phase would. The read-only checks run in parallel;
// the faults (which touch every request) follow one by one.
func TestKube(t *testing.T) { //nolint:tparallel // the fault subtests must run after the parallel "api" group
	t.Parallel()
	if os.Getenv(kubeapi.EnvBinary) == "" && testing.Short() {
		t.Skipf("-short and $%s unset: not building the kube-apiserver helper", kubeapi.EnvBinary)
	}
	id, err := identity.Load(filepath.Join("..", "talos", "identity", "testdata", "talossecrets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ca := id.Bundle().Certs.K8s
	inj := labnet.NewInjector(labnet.Knobs{})
	srv, err := kubeapi.Start(t.Context(), kubeapi.Options{
		Address: apiVIP + ":0", CACertPEM: ca.Crt, CAKeyPEM: ca.Key, DataDir: t.TempDir(), Injector: inj, Logf: t.Logf,
		// Evicted pods stay Terminating a while, as behind a real kubelet:
		// a drain must wait for them.
		PodTerminationDelay: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	path := writeKubeconfig(t, srv.URL(), ca.Crt, ca.Key)
	k, err := kube.Load(path, kube.Options{RetryInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("api", func(t *testing.T) {
		t.Run("nodes", func(t *testing.T) { t.Parallel(); checkNodes(t, srv, k) })
		t.Run("wait ready", func(t *testing.T) { t.Parallel(); checkWaitReady(t, srv, k) })
		t.Run("drain evicts", func(t *testing.T) { t.Parallel(); checkDrainEvicts(t, srv, k) })
		t.Run("drain budget", func(t *testing.T) { t.Parallel(); checkDrainBudget(t, srv, k) })
		t.Run("drain refuses unmanaged", func(t *testing.T) { t.Parallel(); checkDrainRefusesUnmanaged(t, srv, k) })
		t.Run("node ops", func(t *testing.T) { t.Parallel(); checkNodeOps(t, srv, k) })
		t.Run("static pods", func(t *testing.T) { t.Parallel(); checkStaticPods(t, srv, k) })
		t.Run("apply", func(t *testing.T) { t.Parallel(); checkApply(t, srv, k) })
		t.Run("apply crd", func(t *testing.T) { t.Parallel(); checkApplyCRD(t, k) })
		t.Run("metadata policy", func(t *testing.T) { t.Parallel(); checkMetadataPolicy(t, srv, k) })
		t.Run("server version", func(t *testing.T) {
			t.Parallel()
			if v, err := k.ServerVersion(t.Context()); err != nil || !strings.HasPrefix(v, "v1.") {
				t.Errorf("ServerVersion = %q, %v", v, err)
			}
		})
	})
	t.Run("ca mismatch", func(t *testing.T) { checkCAMismatch(t, srv, ca.Crt, ca.Key) })
	t.Run("probe", func(t *testing.T) { checkProbe(t, srv, inj, k) })
	t.Run("server version retries", func(t *testing.T) { checkVersionRetries(t, srv, inj, k) })
	t.Run("timeout", func(t *testing.T) { checkTimeout(t, inj, path) })
	t.Run("transient retried", func(t *testing.T) { checkTransientRetried(t, inj, path) })
}

// checkTransientRetried: an idempotent request answered 503 once is asked
// again and succeeds; a 403 is an answer, not retried.
func checkTransientRetried(t *testing.T, inj *labnet.Injector, path string) {
	t.Helper()
	t.Cleanup(func() { inj.Set(labnet.Knobs{}) })
	k, err := kube.Load(path, kube.Options{RetryInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: kubeapi.Service, PathPrefix: nodesPath, Nth: 1, Status: http.StatusServiceUnavailable}}})
	if _, err := k.Nodes(t.Context()); err != nil {
		t.Errorf("Nodes after one 503 = %v, want it asked again", err)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: kubeapi.Service, PathPrefix: nodesPath, Nth: 1, Status: http.StatusForbidden}}})
	if _, err := k.Nodes(t.Context()); err == nil {
		t.Error("Nodes after a 403 succeeded, want the 403")
	}
}

func checkNodes(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	err := srv.RegisterNode(t.Context(), kubeapi.Node{
		Name: "fields-1", Labels: map[string]string{"talosc/pool": "worker"}, Ready: true,
		Addresses: []netip.Addr{netip.MustParseAddr("127.62.1.1")},
		Taints:    []corev1.Taint{{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}, {Key: "edge", Effect: corev1.TaintEffectNoExecute}},
	})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := k.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(nodes, func(n kube.Node) bool { return n.Name == "fields-1" })
	if i < 0 {
		t.Fatalf("Nodes = %+v, lacks fields-1", nodes)
	}
	n := nodes[i]
	if !n.Ready || n.InternalIP != "127.62.1.1" || n.KubeletVersion != kubeapi.DefaultKubeletVersion || n.Unschedulable || n.Labels["talosc/pool"] != "worker" ||
		!slices.Contains(n.Taints, "dedicated=db:NoSchedule") || !slices.Contains(n.Taints, "edge:NoExecute") {
		t.Errorf("Nodes()[fields-1] = %+v", n)
	}
	if got, found, err := k.NodeByName(t.Context(), "fields-1"); err != nil || !found || !reflect.DeepEqual(got, n) {
		t.Errorf("NodeByName(fields-1) = %+v, %t, %v; want %+v as listed", got, found, err, n)
	}
}

// checkWaitReady: WaitReady waits for a NotReady node to become Ready and
// for a node that registers later; a node that never comes fails it after
// its budget, named.
func checkWaitReady(t *testing.T, srv *kubeapi.Server, k *kube.Client) {
	t.Helper()
	if err := srv.RegisterNode(t.Context(), kubeapi.Node{Name: "wait-1"}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = srv.SetReady(t.Context(), "wait-1", true)
		_ = srv.RegisterNode(t.Context(), kubeapi.Node{Name: "wait-2", Ready: true})
	}()
	var mu sync.Mutex
	var seen [][2]int
	start := time.Now()
	nodes, err := k.WaitReady(t.Context(), []string{"wait-1", "wait-2"}, 10*time.Second, 20*time.Millisecond, func(ready, total int) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, [2]int{ready, total})
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("WaitReady returned after %s, before the nodes were Ready", d)
	}
	for _, name := range []string{"wait-1", "wait-2"} {
		if i := slices.IndexFunc(nodes, func(n kube.Node) bool { return n.Name == name }); i < 0 || !nodes[i].Ready {
			t.Errorf("WaitReady's last list lacks %s Ready: %+v", name, nodes)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 || seen[0] != [2]int{0, 2} || seen[len(seen)-1] != [2]int{2, 2} {
		t.Errorf("progress = %v, want 0/2 first and 2/2 last", seen)
	}

	_, err = k.WaitReady(t.Context(), []string{"wait-1", "ghost"}, 200*time.Millisecond, 20*time.Millisecond, nil)
	if want := "kube: nodes not Ready after 200ms: ghost (not registered)"; err == nil || err.Error() != want {
		t.Errorf("WaitReady for a missing node = %v, want %q", err, want)
	}
}

// checkProbe: one failed list is never "down" (I-3): the API is up when a
// later attempt succeeds, down only after every attempt failed.
func checkProbe(t *testing.T, srv *kubeapi.Server, inj *labnet.Injector, k *kube.Client) {
	t.Helper()
	failFirst := func(n int) {
		fs := make([]labnet.Fault, n)
		for i := range fs {
			fs[i] = labnet.Fault{Service: kubeapi.Service, PathPrefix: nodesPath, Nth: 1, Status: http.StatusServiceUnavailable}
		}
		inj.Set(labnet.Knobs{Faults: fs})
	}
	t.Cleanup(func() { inj.Set(labnet.Knobs{}) })

	failFirst(2)
	before := count(srv, nodesPath)
	if up, err := k.Probe(t.Context(), 3, 20*time.Millisecond); !up || err != nil {
		t.Errorf("Probe after 2 failed lists = %t, %v; want up", up, err)
	}
	if n := count(srv, nodesPath) - before; n < 3 {
		t.Errorf("Probe listed the nodes %d times, want at least 3 (up only after two failures)", n)
	}

	failFirst(3)
	before = count(srv, nodesPath)
	up, err := k.Probe(t.Context(), 3, 20*time.Millisecond)
	if up || err == nil || !strings.HasPrefix(err.Error(), "kube list nodes: ") {
		t.Errorf("Probe with every list failing = %t, %v; want down with the last error", up, err)
	}
	if n := count(srv, nodesPath) - before; n < 3 {
		t.Errorf("Probe listed the nodes %d times, want at least 3", n)
	}

	// A stopped API (its address refuses connections).
	if err := srv.SetServing(false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	up, err = k.Probe(t.Context(), 3, 100*time.Millisecond)
	took := time.Since(start)
	if err := srv.SetServing(true); err != nil {
		t.Fatal(err)
	}
	if up || err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Probe of a stopped API = %t, %v; want down, connection refused", up, err)
	}
	if took < 200*time.Millisecond {
		t.Errorf("Probe of a stopped API gave up after %s: not after 3 attempts 100ms apart", took)
	}
	if up, err := k.Probe(t.Context(), 3, 20*time.Millisecond); !up {
		t.Errorf("Probe after the API came back = down: %v", err)
	}
}

// checkVersionRetries: ServerVersion asks three times, then fails (I-13).
func checkVersionRetries(t *testing.T, srv *kubeapi.Server, inj *labnet.Injector, k *kube.Client) {
	t.Helper()
	t.Cleanup(func() { inj.Set(labnet.Knobs{}) })
	fail := labnet.Fault{Service: kubeapi.Service, PathPrefix: "/version", Nth: 1, Status: http.StatusServiceUnavailable}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{fail, fail}})
	if v, err := k.ServerVersion(t.Context()); err != nil || v == "" {
		t.Errorf("ServerVersion after 2 failures = %q, %v", v, err)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{fail, fail, fail}})
	before := count(srv, "/version")
	_, err := k.ServerVersion(t.Context())
	if err == nil || !strings.HasPrefix(err.Error(), "kube server version: ") || !strings.HasSuffix(err.Error(), "(after 3 attempts)") {
		t.Errorf("ServerVersion after 3 failures = %v", err)
	}
	if n := count(srv, "/version") - before; n != 3 {
		t.Errorf("ServerVersion asked %d times, want 3", n)
	}
}

// checkTimeout: a request that never gets an answer fails in about the
// request timeout, naming the request.
func checkTimeout(t *testing.T, inj *labnet.Injector, path string) {
	t.Helper()
	t.Cleanup(func() { inj.Set(labnet.Knobs{}) })
	k, err := kube.Load(path, kube.Options{Timeout: 300 * time.Millisecond, RetryInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{{Service: kubeapi.Service, PathPrefix: nodesPath, Hang: true}}})
	// A list is idempotent: each of its 4 attempts is bounded alone.
	start := time.Now()
	_, err = k.Nodes(t.Context())
	took := time.Since(start)
	if want := "kube list nodes: timed out after 300ms"; err == nil || err.Error() != want {
		t.Errorf("Nodes = %v, want %q", err, want)
	}
	if took < 4*300*time.Millisecond || took > 4*time.Second {
		t.Errorf("Nodes gave up after %s, want about 4 x 300ms", took)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "kubeconfig")
	if _, err := kube.Load(missing, kube.Options{}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load of a missing file = %v, want an error naming it", err)
	}
	if _, err := kube.FromBytes(nil, kube.Options{}); err == nil {
		t.Error("FromBytes of an empty kubeconfig succeeded")
	}
}

// count is how many requests of path the API's front door answered.
func count(srv *kubeapi.Server, path string) int {
	n := 0
	for _, c := range srv.Recorder().Calls() {
		if c.Service == kubeapi.Service && c.Path == path {
			n++
		}
	}
	return n
}

// writeKubeconfig writes a kubeconfig as Talos's Kubeconfig RPC makes it
// (the cluster CA, an admin client certificate it signed) and returns its
// path.
func writeKubeconfig(t *testing.T, server string, caPEM, caKeyPEM []byte) string {
	t.Helper()
	certPEM, keyPEM, err := kubeapi.SignClientCert(caPEM, caKeyPEM, "admin", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["lab"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["admin@lab"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	kc.Contexts["admin@lab"] = &clientcmdapi.Context{Cluster: "lab", AuthInfo: "admin@lab"}
	kc.CurrentContext = "admin@lab"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
