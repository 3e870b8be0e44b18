package labkube

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/labels"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// kubeletChange is what happened to a node's kubelet.
type kubeletChange int

const (
	// kubeletKept: nothing (only the node's knobs changed).
	kubeletKept kubeletChange = iota
	// kubeletStarted: the node booted with its configuration.
	kubeletStarted
	// kubeletApplied: a configuration was applied live.
	kubeletApplied
	// kubeletStopped: the node went down; its static pods stay for when
	// it is back.
	kubeletStopped
	// kubeletRemoved: the machine was reset or deleted: its kubelet is
	// gone for good, its static pods with it.
	kubeletRemoved
)

// after is the change that sums up c followed by next: a boot stays a boot
// through a live apply, any other change replaces the one before.
func (c kubeletChange) after(next kubeletChange) kubeletChange {
	switch {
	case next == kubeletKept, c == kubeletStarted && next == kubeletApplied:
		return c
	default:
		return next
	}
}

// nodeMirror applies the changes of one node to its cluster's Node object,
// one at a time and in order; changes that pile up meanwhile are summed
// (the latest status wins, a boot is never lost).
type nodeMirror struct {
	mu      sync.Mutex
	change  kubeletChange
	status  talosnode.NodeStatus
	pending bool
	running bool
	waiters []chan error
}

// OnNodeEvent mirrors a node's state into its cluster's API (the fleet's
// Options.OnEvent). Talos never deletes a Node: a reset or deleted machine
// leaves its Node behind, its kubelet (and the mirror pods of its static
// pods) gone, until a client deletes it.
func (k *Kubernetes) OnNodeEvent(ev talosnode.Event) {
	switch ev.Kind {
	case talosnode.EventBooted:
		k.mirror(ev.Node, kubeletStarted)
	case talosnode.EventConfig:
		k.mirror(ev.Node, kubeletApplied)
	case talosnode.EventDown:
		k.mirror(ev.Node, kubeletStopped)
	case talosnode.EventReset:
		k.Removed(ev.Node)
	}
}

// Removed mirrors the node st describes, reset or deleted with its
// machine: its Node stays, silent, its mirror pods go; the last control
// plane of a cluster takes the cluster's API with it.
func (k *Kubernetes) Removed(st talosnode.NodeStatus) {
	k.mirror(st, kubeletRemoved)
	k.stopIfGone(st.Cluster)
}

// mirror queues a change of the node st describes; the channel tells how
// it went once applied (at once when there is nothing to apply it to).
func (k *Kubernetes) mirror(st talosnode.NodeStatus, c kubeletChange) <-chan error {
	done := make(chan error, 1)
	if st.Cluster == "" || st.Hostname == "" {
		done <- nil
		return done
	}
	key := st.Cluster + "/" + st.Hostname
	k.mu.Lock() // held throughout: close waits for every runMirror started
	defer k.mu.Unlock()
	if k.closed {
		done <- nil
		return done
	}
	m := k.mirrors[key]
	if m == nil {
		m = &nodeMirror{}
		k.mirrors[key] = m
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.pending {
		m.change = kubeletKept
	}
	m.change, m.status, m.pending = m.change.after(c), st, true
	m.waiters = append(m.waiters, done)
	if !m.running {
		m.running = true
		k.wg.Go(func() { k.runMirror(m) })
	}
	return done
}

// runMirror applies m's changes until none is pending.
func (k *Kubernetes) runMirror(m *nodeMirror) {
	for {
		m.mu.Lock()
		if !m.pending {
			m.running = false
			m.mu.Unlock()
			return
		}
		c, st, waiters := m.change, m.status, m.waiters
		m.pending, m.waiters = false, nil
		m.mu.Unlock()
		err := k.applyChange(st, c)
		if err != nil {
			k.opts.Logf("kubernetes: node %s: %v", st.Hostname, err)
		}
		for _, w := range waiters {
			w <- err
		}
	}
}

// applyChange makes the Node of st what a kubelet, Talos's node controller
// and the cluster's controllers make it after c: registered with its
// control plane's mirror pods and given its workload at a boot, relabelled
// (and its kubelet version and mirror pods following the configuration)
// after a live apply, gone silent when the machine stops, its mirror pods
// gone too when it was reset or deleted; then the node's drainBlocked knob
// is applied.
func (k *Kubernetes) applyChange(st talosnode.NodeStatus, c kubeletChange) error {
	srv := k.Server(st.Cluster)
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(k.ctx, 30*time.Second)
	defer cancel()
	var err error
	switch c {
	case kubeletStarted:
		err = srv.RegisterNode(ctx, kubeNode(st))
		if err == nil {
			err = srv.SyncMirrorPods(ctx, st.Hostname, staticPods(st))
		}
		if err == nil {
			err = srv.PlaceWorkload(ctx, st.Hostname)
		}
	case kubeletApplied:
		if err = srv.UpdateNode(ctx, kubeNode(st)); err == nil {
			err = srv.SyncMirrorPods(ctx, st.Hostname, staticPods(st))
		}
	case kubeletStopped:
		err = srv.SetReady(ctx, st.Hostname, false)
	case kubeletRemoved:
		if err = srv.SetReady(ctx, st.Hostname, false); err == nil {
			err = srv.SyncMirrorPods(ctx, st.Hostname, nil)
		}
	case kubeletKept:
	}
	if err == nil {
		err = k.applyDrainKnob(ctx, srv, st)
	}
	if apierrors.IsNotFound(err) {
		return nil // not registered (yet): its boot brings the knob along
	}
	return err
}

// applyDrainKnob blocks or unblocks the drain of st's Node as the knob of
// the node now at its address says (a machine deleted since keeps its
// Node as it is).
func (k *Kubernetes) applyDrainKnob(ctx context.Context, srv *kubeapi.Server, st talosnode.NodeStatus) error {
	n, ok := k.opts.Fleet.Node(st.Address)
	if !ok {
		return nil
	}
	if now := n.Status(); now.Cluster != st.Cluster || now.Hostname != st.Hostname {
		return nil
	}
	return srv.SetDrainBlocked(ctx, st.Hostname, n.Knobs().DrainBlocked)
}

// ApplyKnobs applies the Kubernetes side of the knobs of the node at addr
// (its drainBlocked) and waits until it is done.
func (k *Kubernetes) ApplyKnobs(ctx context.Context, addr netip.Addr) error {
	n, ok := k.opts.Fleet.Node(addr)
	if !ok {
		return nil
	}
	select {
	case err := <-k.mirror(n.Status(), kubeletKept):
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// kubeNode is the Node a kubelet registers for st, labelled and tainted by
// Talos from the configuration (machine.nodeLabels, machine.nodeTaints and
// the control plane's role label and taint, as machinery renders them).
func kubeNode(st talosnode.NodeStatus) kubeapi.Node {
	taints := make([]corev1.Taint, 0, len(st.Taints))
	for key, v := range st.Taints {
		value, effect := labels.ParseTaint(v)
		taints = append(taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	slices.SortFunc(taints, func(a, b corev1.Taint) int { return cmp.Compare(a.Key, b.Key) })
	return kubeapi.Node{
		Name: st.Hostname, Labels: st.Labels, Taints: taints, KubeletVersion: st.KubeletVersion,
		OSImage: fmt.Sprintf("Talos (%s)", st.Version), Ready: true, Addresses: []netip.Addr{st.Address},
	}
}
