package talosnode

import (
	"context"

	"github.com/google/uuid"
	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// bootIDPath is the kernel's boot id, which talosctl's reboot tracker
// reads through MachineService.Read on every Talos version.
const bootIDPath = "/proc/sys/kernel/random/boot_id"

// bootState is what a node's kernel makes up anew at every boot: its boot
// id and machined's in-memory event buffer. Guarded by the fleet's mutex
// (the event log has its own lock).
type bootState struct {
	// gen is the boot generation the id was made for, so a boot that is
	// retried (a worker waiting for trustd) keeps its id.
	gen    uint64
	id     string
	events eventLog
	// reset is the reset sequence the node runs, if any.
	reset resetRun
}

// newBoot starts boot generation g: a fresh random boot id (what
// /proc/sys/kernel/random/boot_id shows) and an empty event buffer, as
// after every power-on, reboot, reboot after an apply or an upgrade and
// reboot into maintenance; f.mu held.
func (n *Node) newBoot(g uint64) {
	if n.boot.gen == g && n.boot.id != "" {
		return
	}
	n.boot.gen, n.boot.id = g, uuid.NewString()
	n.boot.events.clear()
}

// BootID is the node's current boot id ("" before its first boot).
func (n *Node) BootID() string {
	n.fleet.mu.Lock()
	defer n.fleet.mu.Unlock()
	return n.boot.id
}

// Read streams a file of the node, as machined does (os:admin only). The
// simulation has one file: the kernel's boot id; every other path is
// missing.
func (s *machineServer) Read(in *machine.ReadRequest, srv grpc.ServerStreamingServer[common.Data]) error {
	n := s.node
	if _, err := n.requireConfig("read"); err != nil {
		return err
	}
	if in.GetPath() != bootIDPath {
		return status.Errorf(codes.NotFound, "stat %s: no such file or directory", in.GetPath())
	}
	return srv.Send(&common.Data{Bytes: []byte(n.BootID() + "\n")})
}

// syncBootID publishes the BootID resource (runtime BootIDs "boot-id",
// Talos ≥ 1.14; older Talos only has the file).
func (n *Node) syncBootID(ctx context.Context) {
	n.fleet.mu.Lock()
	id, current := n.boot.id, atLeast114(n.image.Version)
	n.fleet.mu.Unlock()
	var want []*runtime.BootID
	if id != "" && current {
		r := runtime.NewBootID()
		r.TypedSpec().BootID = id
		want = append(want, r)
	}
	syncKind(ctx, n.st, runtime.NamespaceName, runtime.BootIDType, want)
}
