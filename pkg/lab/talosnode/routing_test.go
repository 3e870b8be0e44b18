package talosnode_test

import (
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/client"
	"github.com/siderolabs/talos/pkg/machinery/config/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/cluster"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

func TestNodeRoutingThroughOneEndpoint(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot()
	c := l.client(cp(1))
	w := fx.addrs[worker].String()

	// one node (-n): the worker answers through cp-01
	st, err := safe.StateGetByID[*runtime.MachineStatus](client.WithNode(ctx(t, 2*time.Second), w), c.COSI, runtime.MachineStatusID)
	if err != nil {
		t.Fatal(err)
	}
	if st.TypedSpec().Stage != runtime.MachineStageRunning {
		t.Fatalf("worker stage %v", st.TypedSpec().Stage)
	}
	svc, err := c.ServiceList(client.WithNode(ctx(t, 2*time.Second), w))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svc.GetMessages()[0].GetServices() {
		if s.GetId() == "etcd" {
			t.Fatal("a worker runs no etcd")
		}
	}

	// several nodes: one message per node, stamped with it; an unreachable
	// node answers with an error in its metadata
	l.nodes[cp(3)].PowerOff()
	//nolint:staticcheck // apid's one-to-many proxying is deprecated, still what talosctl -n a,b does
	resp, err := c.MachineClient.Version(client.WithNodes(ctx(t, 2*time.Second), fx.addrs[cp(1)].String(), w, fx.addrs[cp(3)].String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := resp.GetMessages()
	if len(msgs) != 3 || msgs[1].GetMetadata().GetHostname() != w || msgs[1].GetVersion().GetTag() != talos114 { //nolint:staticcheck // the metadata one-to-many answers carry
		t.Fatalf("aggregated versions: %v", msgs)
	}
	if msgs[2].GetMetadata().GetError() == "" { //nolint:staticcheck // as above
		t.Fatalf("no error for the powered-off node: %v", msgs[2])
	}
	if _, err := c.Version(client.WithNodes(ctx(t, 2*time.Second), fx.addrs[cp(3)].String())); !contains(err, "connection refused") { //nolint:staticcheck // as above
		t.Fatalf("client-side filtering of a node error: %v", err)
	}

	// discovery members carry what talosc reads
	list, err := safe.StateListAll[*cluster.Member](ctx(t, 2*time.Second), c.COSI)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for m := range list.All() {
		spec := m.TypedSpec()
		if m.Metadata().ID() != spec.Hostname || len(spec.Addresses) != 1 || spec.Addresses[0] != fx.addrs[spec.Hostname] || spec.OperatingSystem != "Talos (v1.14.1)" {
			t.Errorf("member %s: %+v", m.Metadata().ID(), spec)
		}
		if (spec.MachineType == machine.TypeControlPlane) != (spec.Hostname != worker) {
			t.Errorf("member %s: machine type %v", spec.Hostname, spec.MachineType)
		}
		found++
	}
	if found != 4 {
		t.Fatalf("%d members, want 4", found)
	}
}
