package talosnode

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/api/common"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// eventCap is how many events a boot keeps for tailing watchers.
const eventCap = 1000

// eventLog is machined's in-memory event buffer of one boot: what
// MachineService.Events tails and follows. The simulation publishes the
// reset sequence's events (see resetStarted). Event ids grow across boots,
// so a tail id from an earlier boot tails the whole new buffer.
type eventLog struct {
	mu      sync.Mutex
	seq     uint64
	entries []eventEntry
	// wake is closed and replaced at every publish and at every boot.
	wake chan struct{}
	boot uint64
}

// eventEntry is one published event.
type eventEntry struct {
	seq uint64
	at  time.Time
	ev  *machine.Event
}

// clear starts the buffer of a new boot: watchers of the old boot end.
func (l *eventLog) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
	l.boot++
	l.wakeLocked()
}

func (l *eventLog) wakeLocked() {
	if l.wake != nil {
		close(l.wake)
	}
	l.wake = make(chan struct{})
}

// publish appends an event of actor (the actor id of the API call that
// started it, "" for none) with Talos's type URL.
func (l *eventLog) publish(actor string, payload proto.Message) {
	value, err := proto.Marshal(payload)
	if err != nil {
		panic(err) // a machinery message always marshals
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	l.entries = append(l.entries, eventEntry{seq: l.seq, at: time.Now(), ev: &machine.Event{
		Data:    &anypb.Any{TypeUrl: "talos/runtime/" + string(payload.ProtoReflect().Descriptor().FullName()), Value: value},
		Id:      eventID(l.seq),
		ActorId: actor,
	}})
	if len(l.entries) > eventCap {
		l.entries = slices.Delete(l.entries, 0, len(l.entries)-eventCap)
	}
	l.wakeLocked()
}

// eventID is an event's id on the wire.
func eventID(seq uint64) string { return fmt.Sprintf("%020d", seq) }

// start is the sequence number a watch with req starts after, and the
// boot it watches.
func (l *eventLog) start(req *machine.EventsRequest) (after, boot uint64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	after, boot = l.seq, l.boot
	switch {
	case req.GetTailId() != "":
		if after, err = strconv.ParseUint(req.GetTailId(), 10, 64); err != nil {
			return 0, 0, fmt.Errorf("error parsing tail_id: %w", err)
		}
	case req.GetTailEvents() < 0:
		after = 0
	case req.GetTailEvents() > 0:
		after -= min(after, uint64(req.GetTailEvents()))
	case req.GetTailSeconds() > 0:
		since := time.Now().Add(-time.Duration(req.GetTailSeconds()) * time.Second)
		for _, e := range slices.Backward(l.entries) {
			if e.at.Before(since) {
				break
			}
			after = e.seq - 1
		}
	}
	return after, boot, nil
}

// next returns the events after seq, the boot they belong to and a
// channel closed at the next publish.
func (l *eventLog) next(after uint64) ([]*machine.Event, uint64, uint64, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	var out []*machine.Event
	for _, e := range l.entries {
		if e.seq > after {
			out = append(out, e.ev)
			after = e.seq
		}
	}
	return out, after, l.boot, l.wake
}

// Events streams the node's events as machined does: an empty hello
// event first, then the tail asked for (TailEvents, TailId, TailSeconds),
// then every new event, optionally only those of one actor. The stream
// ends when the node boots again.
func (s *machineServer) Events(req *machine.EventsRequest, srv grpc.ServerStreamingServer[machine.Event]) error {
	n := s.node
	if _, err := n.requireConfig("events"); err != nil {
		return err
	}
	log := &n.boot.events
	after, boot, err := log.start(req)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if err := srv.Send(&machine.Event{Data: &anypb.Any{}, Id: eventID(after), ActorId: req.GetWithActorId()}); err != nil {
		return err
	}
	for {
		evs, last, b, wake := log.next(after)
		if b != boot {
			return nil
		}
		for _, ev := range evs {
			if req.GetWithActorId() != "" && ev.GetActorId() != req.GetWithActorId() {
				continue
			}
			if err := srv.Send(ev); err != nil {
				return err
			}
		}
		after = last
		select {
		case <-srv.Context().Done():
			return srv.Context().Err()
		case <-n.fleet.ctx.Done():
			return nil
		case <-wake:
		}
	}
}

// resetRun is the reset sequence a node runs, for its events.
type resetRun struct {
	actor                  string
	graceful, controlPlane bool
}

// resetStarted records a reset sequence accepted by the API and publishes
// its start; it returns the actor id the API answers with; f.mu held.
func (n *Node) resetStarted(graceful bool) string {
	r := resetRun{actor: actorID(), graceful: graceful, controlPlane: n.cfg != nil && n.cfg.controlPlane()}
	n.boot.reset = r
	n.boot.events.publish(r.actor, &machine.SequenceEvent{Sequence: "reset", Action: machine.SequenceEvent_START})
	return r.actor
}

// resetFailed publishes a failed reset sequence as machined's controller
// does: the sequence stops, then a fatal NOOP event carries the error of
// the phase ("leave" or "preReset") that failed.
func (n *Node) resetFailed(phase string, err error) {
	n.fleet.mu.Lock()
	r := n.boot.reset
	n.fleet.mu.Unlock()
	log := &n.boot.events
	log.publish(r.actor, &machine.SequenceEvent{Sequence: "reset", Action: machine.SequenceEvent_STOP})
	log.publish(r.actor, &machine.SequenceEvent{Sequence: "reset", Action: machine.SequenceEvent_NOOP, Error: &common.Error{
		Code:    common.Code_FATAL,
		Message: fmt.Sprintf("sequence failed: error running phase %d in reset sequence: task 1/1: failed, %s", r.phase(phase), err),
	}})
}

// resetStopsServices publishes the stopAllServices task of a reset that
// got past its failing phases: the last event before apid goes away (what
// `talosctl reset` waits for).
func (n *Node) resetStopsServices() {
	n.fleet.mu.Lock()
	actor := n.boot.reset.actor
	n.fleet.mu.Unlock()
	n.boot.events.publish(actor, &machine.TaskEvent{Task: "stopAllServices", Action: machine.TaskEvent_START})
}

// phase is the number of a phase of a VM's reset sequence (drain and
// cleanup, dbus, leave on a graceful control plane, preReset, …).
func (r resetRun) phase(name string) int {
	phases := []string{"cleanup", "dbus"}
	if r.graceful {
		phases = slices.Insert(phases, 0, "drain")
	}
	if r.graceful && r.controlPlane {
		phases = append(phases, "leave")
	}
	phases = append(phases, "preReset")
	return slices.Index(phases, name) + 1
}
