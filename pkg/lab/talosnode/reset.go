package talosnode

import (
	"context"
	"errors"

	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/constants"
	"github.com/siderolabs/talos/pkg/machinery/resources/runtime"
)

// Reset wipes the node in the background, as machined's reset sequence
// does: a graceful reset of a control plane first leaves etcd (a failure
// aborts the reset and the node keeps running); then the disks are wiped
// and the node halts, or reboots into maintenance mode.
func (s *machineServer) Reset(_ context.Context, in *machine.ResetRequest) (*machine.ResetResponse, error) {
	n := s.node
	if len(in.GetUserDisksToWipe()) > 0 && in.GetMode() == machine.ResetRequest_SYSTEM_DISK {
		return nil, errors.New("reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter")
	}
	reply := &machine.ResetResponse{Messages: []*machine.Reset{{ActorId: actorID()}}}
	f := n.fleet
	f.mu.Lock()
	if n.stage == runtime.MachineStageResetting {
		// a reset sequence runs: machined's sequence lock refuses this one
		// in the background ("sequence not started"), the call succeeds
		f.mu.Unlock()
		return reply, nil
	}
	r := resetSeq{gen: n.gen, graceful: in.GetGraceful(), reboot: in.GetReboot()}
	r.wipeState, r.wipeEphemeral = wipes(in.GetSystemPartitionsToWipe())
	n.stage = runtime.MachineStageResetting
	actor := n.resetStarted(in.GetGraceful())
	f.mu.Unlock()
	n.syncResources()
	f.after(0, func() { n.resetSequence(r) })
	return &machine.ResetResponse{Messages: []*machine.Reset{{ActorId: actor}}}, nil
}

// resetSeq is one reset sequence: of boot generation gen, graceful or not,
// ending in a reboot or a halt.
type resetSeq struct {
	gen              uint64
	graceful, reboot bool
	// wipeState and wipeEphemeral are the system volumes it wipes: STATE
	// holds the configuration, EPHEMERAL etcd's data (and an uploaded
	// recovery snapshot).
	wipeState, wipeEphemeral bool
}

// wipes tells which of STATE and EPHEMERAL a reset wipes: both without a
// list of system partitions (the whole system disk), else those listed.
func wipes(parts []*machine.ResetPartitionSpec) (state, ephemeral bool) {
	if len(parts) == 0 {
		return true, true
	}
	for _, p := range parts {
		switch p.GetLabel() {
		case constants.StatePartitionLabel:
			state = true
		case constants.EphemeralPartitionLabel:
			ephemeral = true
		}
	}
	return state, ephemeral
}

// resetSequence runs a reset; it stops where Knobs.ResetHangs holds it.
func (n *Node) resetSequence(r resetSeq) {
	f := n.fleet
	f.mu.Lock()
	if n.gen != r.gen {
		f.mu.Unlock()
		return
	}
	if n.knobs.ResetHangs {
		n.hungReset = &r
		f.mu.Unlock()
		return
	}
	g := r.gen
	leave := r.graceful && n.cfg != nil && n.cfg.controlPlane() && n.etcdData
	failure := n.knobs.ResetFails
	f.mu.Unlock()

	var err error
	phase := "leave"
	if leave {
		err = n.leaveEtcd()
	}
	if err == nil && failure != "" {
		phase, err = "preReset", errors.New(failure)
	}
	if err != nil {
		n.resetFailed(phase, err)
		// the sequence failed: the node keeps running, unwiped
		f.mu.Lock()
		if n.gen == g {
			n.stage = runtime.MachineStageRunning
			n.lastResetError = err
		}
		f.mu.Unlock()
		n.syncResources()
		return
	}
	f.after(f.timing.Reset, func() { n.wipe(g, r) })
}

// wipe erases what the reset wipes: STATE (the configuration: gone from
// discovery, it boots into maintenance mode or takes the platform's
// configuration again), EPHEMERAL (etcd's data: the last control plane
// holding some takes the cluster's etcd with it, Options.EtcdLost); then
// it halts or reboots.
func (n *Node) wipe(g uint64, r resetSeq) {
	f := n.fleet
	f.mu.Lock()
	if n.gen != g {
		f.mu.Unlock()
		return
	}
	before := n.statusLocked()
	c, reboot := n.cluster, r.reboot
	if c != nil && r.wipeState {
		c.forget(n)
	}
	if r.wipeState {
		n.cfg, n.staged, n.pending = nil, nil, nil
	}
	if r.wipeEphemeral {
		n.etcdData, n.etcdMember, n.etcdRecovery = false, nil, etcdRecovery{}
	}
	lost := c != nil && c.loseEtcdIfGone()
	n.down(runtime.MachineStageResetting)
	if !reboot {
		n.powered, n.stage = false, runtime.MachineStageUnknown
	}
	ng, wait := n.gen, n.rebootDown()
	f.mu.Unlock()
	n.resetStopsServices()
	n.stopAPI()
	f.emitStatus(EventReset, before)
	n.changed(c)
	if hook := f.opts.EtcdLost; lost && hook != nil {
		f.wg.Go(func() { hook(c) })
	}
	if reboot {
		f.after(wait, func() { n.bootDone(ng) })
	}
}

// WipeEphemeral loses the node's EPHEMERAL out of band, as a failed disk
// or an operator's mistake does: etcd's data (and an uploaded recovery
// snapshot) are gone, no etcd leave, and a running node reboots with its
// configuration; the last control plane of a cluster holding etcd data
// takes the cluster's etcd with it (Options.EtcdLost).
func (n *Node) WipeEphemeral() {
	n.fleet.mu.Lock()
	g := n.gen
	n.fleet.mu.Unlock()
	n.wipe(g, resetSeq{gen: g, reboot: true, wipeEphemeral: true})
}
