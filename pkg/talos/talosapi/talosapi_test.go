package talosapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/lab/talosnode"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

const versionRPC = "/machine.MachineService/Version"

// TestBootstrapLifecycle drives a fresh control plane as the nodes phase
// does: wait until apid answers, bootstrap before its services are up
// (retried), bootstrap again (success, I-8), read its version and etcd.
func TestBootstrapLifecycle(t *testing.T) {
	t.Parallel()
	timing := talosnode.Timing{Boot: 150 * time.Millisecond, Services: 300 * time.Millisecond, HealthPoll: 10 * time.Millisecond}
	c := newCluster(t, 1, 0, talosnode.Options{Timing: timing})
	c.boot(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)

	var waited atomic.Int32
	if err := cl.WaitReachable(t.Context(), node, 5*time.Second, 20*time.Millisecond, func(time.Duration) { waited.Add(1) }); err != nil {
		t.Fatal(err)
	}
	if waited.Load() == 0 {
		t.Error("WaitReachable reported no progress while apid was still booting")
	}
	if tag, err := cl.Version(t.Context(), node); err != nil || tag != talosVersion {
		t.Fatalf("Version = %q, %v; want %s", tag, err, talosVersion)
	}

	if err := cl.Bootstrap(t.Context(), node, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := c.bootstraps(codes.FailedPrecondition); n == 0 {
		t.Error("Bootstrap never met \"bootstrap is not available yet\": the test proves no retry")
	}
	if err := cl.Bootstrap(t.Context(), node, 5*time.Second); err != nil {
		t.Fatalf("second Bootstrap: %v", err)
	}
	if ok, again := c.bootstraps(codes.OK), c.bootstraps(codes.AlreadyExists); ok != 1 || again != 1 {
		t.Errorf("Bootstrap calls: %d OK, %d AlreadyExists; want 1 and 1", ok, again)
	}
	if twice := c.nodes[cp1].Cluster().DoubleBootstrapped(); len(twice) > 0 {
		t.Errorf("etcd bootstrapped twice on %v", twice)
	}

	members, err := cl.EtcdMembers(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0].Hostname != cp1 || members[0].Learner || members[0].ID == 0 {
		t.Errorf("EtcdMembers = %+v, want one started voter %s", members, cp1)
	}
}

// TestBootstrapAnswerLost: a Bootstrap the node carried out but whose
// answer was lost (504 at a proxy: DeadlineExceeded; a reset: Unavailable)
// is asked again, and the node's "already" ends it: one etcd, bootstrapped
// once.
func TestBootstrapAnswerLost(t *testing.T) {
	t.Parallel()
	for _, lost := range []labnet.Fault{{Status: http.StatusGatewayTimeout}, {Reset: true}} {
		inj := labnet.NewInjector(labnet.Knobs{})
		// services up as apid is: the first Bootstrap is carried out
		timing := talosnode.Timing{Boot: time.Millisecond, Services: time.Millisecond, HealthPoll: 10 * time.Millisecond}
		c := newCluster(t, 1, 0, talosnode.Options{Injector: inj, Timing: timing})
		c.booted(cp1, talosnode.Knobs{})
		time.Sleep(200 * time.Millisecond) // well past Services
		cl := c.dial(cp1, talosapi.Options{})
		lost.Service, lost.PathPrefix, lost.Nth, lost.After = talosnode.ServiceName, "/machine.MachineService/Bootstrap", 1, true
		inj.Set(labnet.Knobs{Faults: []labnet.Fault{lost}})
		if err := cl.Bootstrap(t.Context(), c.addr(cp1), 5*time.Second); err != nil {
			t.Fatalf("Bootstrap whose first answer was lost (%+v): %v", lost, err)
		}
		if ok, again := c.bootstraps(codes.OK), c.bootstraps(codes.AlreadyExists); again != 1 {
			t.Errorf("lost %+v: Bootstrap calls answered %d OK, %d AlreadyExists; want the retry to meet AlreadyExists", lost, ok, again)
		}
		if twice := c.nodes[cp1].Cluster().DoubleBootstrapped(); len(twice) > 0 {
			t.Errorf("etcd bootstrapped twice on %v", twice)
		}
	}
}

// TestBootstrapFinalAnswerIsNotRetried: only "not available yet" and an
// unreachable node are retried; a worker's refusal ends Bootstrap at once.
func TestBootstrapFinalAnswerIsNotRetried(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.boot(cp1, talosnode.Knobs{}) // a worker's apid waits for a control plane's trustd
	c.boot(worker1, talosnode.Knobs{})
	cl := c.dial(worker1, talosapi.Options{})
	err := cl.Bootstrap(t.Context(), c.addr(worker1), 5*time.Second)
	if status.Code(err) != codes.Unimplemented || !strings.Contains(err.Error(), "talos Bootstrap on "+c.addr(worker1)) {
		t.Fatalf("Bootstrap on a worker = %v, want its Unimplemented answer, naming the call", err)
	}
	if n := c.bootstraps(codes.Unimplemented); n != 1 {
		t.Errorf("%d refused Bootstrap calls, want 1", n)
	}
}

// TestUnreachableNodeExhaustsBudgets: a node whose apid never answers fails
// WaitReachable and Bootstrap after their budgets, with the last error.
func TestUnreachableNodeExhaustsBudgets(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 0, talosnode.Options{})
	c.boot(cp1, talosnode.Knobs{NeverBoots: true})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)

	start := time.Now()
	err := cl.WaitReachable(t.Context(), node, 200*time.Millisecond, 20*time.Millisecond, nil)
	if err == nil || !strings.Contains(err.Error(), "talos API on "+node+" not reachable: still failing after 200ms: talos Version on "+node) {
		t.Fatalf("WaitReachable = %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("WaitReachable took %s for a 200ms budget", d)
	}
	err = cl.Bootstrap(t.Context(), node, 200*time.Millisecond)
	// the last attempt failed Unavailable, or the budget cut it short
	if code := status.Code(err); (code != codes.Unavailable && code != codes.DeadlineExceeded) || !strings.Contains(err.Error(), "still failing after 200ms: talos Bootstrap on "+node) {
		t.Fatalf("Bootstrap = %v", err)
	}
}

// TestCallTimeout: a call that never gets an answer fails in about
// CallTimeout, naming the call and the node.
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{{Service: talosnode.ServiceName, PathPrefix: versionRPC, Hang: true}}})
	c := newCluster(t, 1, 0, talosnode.Options{Injector: inj})
	c.boot(cp1, talosnode.Knobs{})
	if err := c.nodes[cp1].WaitAPI(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	cl := c.dial(cp1, talosapi.Options{CallTimeout: 300 * time.Millisecond})
	node := c.addr(cp1)
	start := time.Now()
	_, err := cl.Version(t.Context(), node)
	took := time.Since(start)
	if want := "talos Version on " + node + ": timed out after 300ms"; err == nil || err.Error() != want {
		t.Fatalf("Version = %v, want %q", err, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a timeout is not a context.DeadlineExceeded: %v", err)
	}
	if took < 300*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("Version gave up after %s, want about 300ms", took)
	}
}

// TestReadsRetryUnavailable: a read answered Unavailable (apid
// restarting) is asked again; a fifth Unavailable in a row is the answer.
func TestReadsRetryUnavailable(t *testing.T) {
	t.Parallel()
	fault := labnet.Fault{Service: talosnode.ServiceName, PathPrefix: versionRPC, Nth: 1, Status: http.StatusServiceUnavailable}
	inj := labnet.NewInjector(labnet.Knobs{})
	c := newCluster(t, 1, 0, talosnode.Options{Injector: inj})
	c.boot(cp1, talosnode.Knobs{})
	if err := c.nodes[cp1].WaitAPI(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	cl := c.dial(cp1, talosapi.Options{RetryInterval: 10 * time.Millisecond})
	node := c.addr(cp1)
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{fault, fault, fault, fault}})
	if v, err := cl.Version(t.Context(), node); err != nil || v == "" {
		t.Errorf("Version after four Unavailable answers = %q, %v; want the version", v, err)
	}
	inj.Set(labnet.Knobs{Faults: []labnet.Fault{fault, fault, fault, fault, fault}})
	if _, err := cl.Version(t.Context(), node); status.Code(err) != codes.Unavailable {
		t.Errorf("Version after five Unavailable answers = %v; want Unavailable", err)
	}
}

// TestHealth runs the server-side health check on a bootstrapped 1+1
// cluster: it passes, reporting Talos's progress, then fails with a clear
// message once the worker is down.
func TestHealth(t *testing.T) {
	t.Parallel()
	c := newCluster(t, 1, 1, talosnode.Options{})
	c.boot(cp1, talosnode.Knobs{})
	c.boot(worker1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	if err := cl.Bootstrap(t.Context(), c.addr(cp1), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[worker1].WaitAPI(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	var lines []string
	o := talosapi.HealthOptions{
		ControlPlanes: []string{c.addr(cp1)}, Workers: []string{c.addr(worker1)},
		K8sEndpoint: c.vip.String(), Timeout: 5 * time.Second,
		Progress: func(l string) { lines = append(lines, l) },
	}
	if err := cl.Health(t.Context(), o); err != nil {
		t.Fatalf("Health: %v\n%s", err, strings.Join(lines, "\n"))
	}
	text := strings.Join(lines, "\n")
	for _, want := range []string{`discovered nodes: ["` + c.addr(cp1) + `" "` + c.addr(worker1) + `"]`, "waiting for etcd to be healthy: OK", "waiting for all nodes to finish boot sequence: OK"} {
		if !strings.Contains(text, want) {
			t.Errorf("progress lacks %q:\n%s", want, text)
		}
	}

	c.nodes[worker1].PowerOff()
	lines = nil
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	err := cl.Health(t.Context(), o)
	if err == nil {
		t.Fatalf("Health with the worker down passed:\n%s", strings.Join(lines, "\n"))
	}
	for _, want := range []string{"talos HealthCheck on " + c.addr(cp1) + ": cluster not healthy after 300ms: waiting for ", `from node "` + c.addr(worker1) + `"`, "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Health error lacks %q: %v", want, err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Health took %s for a 300ms wait", d)
	}
}

// TestKubeconfigWorksAgainstAPIServer fetches the admin kubeconfig from
// the control plane after bootstrap and uses it against the cluster's real
// kube-apiserver, which the bootstrap started on the VIP.
func TestKubeconfigWorksAgainstAPIServer(t *testing.T) {
	t.Parallel()
	if os.Getenv(kubeapi.EnvBinary) == "" && testing.Short() {
		t.Skipf("-short and $%s unset: not building the kube-apiserver helper", kubeapi.EnvBinary)
	}
	type started struct {
		srv *kubeapi.Server
		err error
	}
	api := make(chan started, 1)
	// Registered before the fleet's Close (cleanups run last-in first-out),
	// which waits for the bootstrap hook: the server is known by then.
	t.Cleanup(func() {
		select {
		case s := <-api:
			if s.srv != nil {
				_ = s.srv.Close()
			}
		default:
		}
	})
	dataDir := t.TempDir()
	c := newCluster(t, 1, 0, talosnode.Options{OnBootstrap: func(info talosnode.BootstrapInfo) {
		srv, err := kubeapi.Start(context.Background(), kubeapi.Options{
			Address:   net.JoinHostPort(info.Endpoint.Hostname(), "6443"),
			CACertPEM: info.CACert, CAKeyPEM: info.CAKey, DataDir: dataDir,
		})
		api <- started{srv, err}
	}})
	c.boot(cp1, talosnode.Knobs{})
	cl := c.dial(cp1, talosapi.Options{})
	node := c.addr(cp1)
	if err := cl.Bootstrap(t.Context(), node, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	kc, err := cl.Kubeconfig(t.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kc), "server: https://"+c.vip.String()+":6443") {
		t.Errorf("kubeconfig does not point at the VIP:\n%s", kc)
	}
	select {
	case s := <-api:
		api <- s // for the cleanup
		if s.err != nil {
			t.Fatal(s.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("kube-apiserver not started after 2m")
	}
	k, err := kube.FromBytes(kc, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := k.ServerVersion(t.Context()); err != nil || !strings.HasPrefix(v, "v1.") {
		t.Fatalf("ServerVersion through the Talos kubeconfig = %q, %v", v, err)
	}
	if _, err := k.Nodes(t.Context()); err != nil {
		t.Fatal(err)
	}
}
