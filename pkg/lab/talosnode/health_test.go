package talosnode_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// health runs the server-side health check and collects its messages.
func health(t *testing.T, c *client.Client, wait time.Duration, info *clusterapi.ClusterInfo) ([]string, error) {
	t.Helper()
	stream, err := c.ClusterHealthCheck(ctx(t, 10*time.Second), wait, info)
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

// fakeKube fails "all k8s nodes to report ready" the first time it is
// asked.
type fakeKube struct {
	asked atomic.Int32
}

func (k *fakeKube) Check(_ context.Context, condition string, nodes []talosnode.NodeInfo) error {
	if condition == "all k8s nodes to report ready" && k.asked.Add(1) == 1 {
		return errors.New("some nodes are not ready: [lab-worker-01]")
	}
	if len(nodes) != 4 {
		return errors.New("wrong node count")
	}
	return nil
}

func TestHealthCheckPasses(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	kube := &fakeKube{}
	l := newLab(t, fx, talosnode.Options{KubeAPI: func(*talosnode.Cluster) talosnode.KubeAPI { return kube }})
	l.bootstrapped()
	msgs, err := health(t, l.client(cp(1)), 5*time.Second, nil)
	if err != nil {
		t.Fatalf("health: %v\n%s", err, strings.Join(msgs, "\n"))
	}
	text := strings.Join(msgs, "\n")
	for _, want := range []string{
		`discovered nodes: [`,
		"waiting for etcd to be healthy: OK",
		"waiting for etcd members to be control plane nodes: OK",
		"waiting for all nodes to finish boot sequence: OK",
		"waiting for all k8s nodes to report ready: some nodes are not ready: [lab-worker-01]",
		"waiting for all k8s nodes to report ready: OK",
		"waiting for all k8s nodes to report schedulable: OK",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("health output lacks %q:\n%s", want, text)
		}
	}
}

func TestHealthCheckFails(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.bootstrapped()
	c := l.client(cp(1))
	msgs, err := health(t, c, 5*time.Second, nil)
	if err != nil || !strings.Contains(strings.Join(msgs, "\n"), "waiting for all k8s nodes to report ready: SKIP") {
		t.Fatalf("health without a Kubernetes API: %v\n%s", err, strings.Join(msgs, "\n"))
	}

	l.nodes[cp(3)].PowerOff()
	msgs, err = health(t, c, 200*time.Millisecond, nil)
	if status.Code(err) != codes.DeadlineExceeded || !strings.Contains(strings.Join(msgs, "\n"), "connect: connection refused") {
		t.Fatalf("health with a control plane down: %v\n%s", err, strings.Join(msgs, "\n"))
	}

	l.nodes[cp(3)].PowerOn()
	eventually(t, "cp-03 back", func() bool { return l.startedMembersUp() == 3 })
	missing := "127.0.0.99"
	info := &clusterapi.ClusterInfo{ControlPlaneNodes: []string{fx.addrs[cp(1)].String(), fx.addrs[cp(2)].String(), fx.addrs[cp(3)].String()}, WorkerNodes: []string{missing}}
	msgs, err = health(t, c, 200*time.Millisecond, info)
	if err == nil || !strings.Contains(strings.Join(msgs, "\n"), `from node "`+missing+`"`) {
		t.Fatalf("health with a missing node: %v\n%s", err, strings.Join(msgs, "\n"))
	}
}
