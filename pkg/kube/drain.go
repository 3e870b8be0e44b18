package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/talosc/talosc/pkg/ctxwait"
)

// The reference's drain: kubectl drain --ignore-daemonsets
// --delete-emptydir-data --timeout 5m (I-X1), with kubectl's pacing.
const (
	// DefaultDrainTimeout bounds a drain after the cordon.
	DefaultDrainTimeout = 5 * time.Minute
	// DefaultEvictErrorRetryDelay is the pause before evicting a pod again
	// after the API refused (429: a PodDisruptionBudget allows no
	// disruption now; or its namespace is terminating).
	DefaultEvictErrorRetryDelay = 5 * time.Second
	// DefaultDrainPoll is how often the drain looks whether the evicted pods
	// are gone.
	DefaultDrainPoll = time.Second
	// podListChunk is kubectl drain's --chunk-size.
	podListChunk = 500
)

// The reasons a pod is still on a draining node.
const (
	// WaitDisruptionBudget: its eviction was refused with 429, which is a
	// PodDisruptionBudget allowing no disruption now (or the API's own
	// rate limiting); the detail is the API's cause, naming the budget.
	WaitDisruptionBudget = "PodDisruptionBudget"
	// WaitNamespaceTerminating: its namespace is being deleted.
	WaitNamespaceTerminating = "namespace terminating"
	// WaitTerminating: evicted, its containers are stopping.
	WaitTerminating = "terminating"
)

// DrainOptions tune Drain; zero fields take the defaults above (the caller
// scales them).
type DrainOptions struct {
	// Timeout bounds the drain after the cordon: listing, evicting and
	// waiting for the pods to be gone.
	Timeout time.Duration
	// EvictErrorRetryDelay is the pause before a refused eviction is tried
	// again.
	EvictErrorRetryDelay time.Duration
	// Poll is how often the drain looks whether evicted pods are gone
	// (after shorter first looks: ctxwait.Backoff).
	Poll time.Duration
	// Progress, if not nil, gets the pods still on the node after every
	// look that saw some (often: throttle it).
	Progress func(DrainProgress)
}

// DrainProgress is a drain that is waiting: the node and its pods still
// there, in the node's list order.
type DrainProgress struct {
	Node    string
	Waiting []PodWait
}

// PodWait is a pod a drain waits for, and why.
type PodWait struct {
	// Pod is "namespace/name".
	Pod string
	// Reason is one of the Wait* constants.
	Reason string
	// Detail is the API's word on it, when there is one ("The disruption
	// budget web needs 2 healthy pods and has 2 currently").
	Detail string
}

// String is the progress line: "waiting for 2 pod(s) on worker-01:
// default/web-x (PodDisruptionBudget), default/web-y (terminating)".
func (p DrainProgress) String() string {
	names := make([]string, 0, len(p.Waiting))
	for _, w := range p.Waiting {
		names = append(names, w.Pod+" ("+w.Reason+")")
	}
	return fmt.Sprintf("waiting for %d pod(s) on %s: %s", len(p.Waiting), p.Node, strings.Join(names, ", "))
}

// Drain does what kubectl drain --ignore-daemonsets --delete-emptydir-data
// --timeout 5m does (I-X1). It cordons the node and lists its pods. If any
// pod declares no controller (or belongs to a DaemonSet that is gone) it
// refuses before evicting anything, naming them: the reference passes no
// --force. Otherwise it evicts every pod but mirror pods and those of
// DaemonSets (emptyDir data goes with its pod) through the policy/v1
// Eviction API, which respects PodDisruptionBudgets. A refused eviction
// (429) is tried again every EvictErrorRetryDelay; a pod already gone
// counts as evicted; any other eviction error fails the drain. It returns
// once every evicted pod is gone. After Timeout it fails naming the pods
// still there and why. The node stays cordoned whatever happens (the
// caller uncordons).
func (c *Client) Drain(ctx context.Context, node string, o DrainOptions) error {
	o = o.withDefaults()
	if err := c.Cordon(ctx, node); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	d := &drain{c: c, node: node, o: o}
	err := d.run(dctx)
	if err != nil && ctx.Err() == nil && dctx.Err() != nil {
		return d.timedOut()
	}
	return err
}

func (o DrainOptions) withDefaults() DrainOptions {
	if o.Timeout <= 0 {
		o.Timeout = DefaultDrainTimeout
	}
	if o.EvictErrorRetryDelay <= 0 {
		o.EvictErrorRetryDelay = DefaultEvictErrorRetryDelay
	}
	if o.Poll <= 0 {
		o.Poll = DefaultDrainPoll
	}
	return o
}

// drain is one Drain's state: the pods it evicts and still waits for.
type drain struct {
	c       *Client
	node    string
	o       DrainOptions
	pending []*evictee
	// listed is whether the first list of the node's pods came back.
	listed bool
	// lastErr is the last failed look at the node's pods (retried at the
	// next poll), for the timeout's error.
	lastErr error
}

type evictee struct {
	namespace, name string
	uid             types.UID
	evicted         bool
	retryAt         time.Time
	wait            PodWait
}

func (d *drain) run(ctx context.Context) error {
	pods, err := d.c.podsOn(ctx, d.node)
	if err != nil {
		return err
	}
	d.listed = true
	evict, err := podsToEvict(pods, func(ns, name string) (bool, error) { return d.c.daemonSetExists(ctx, ns, name) })
	if err != nil {
		return fmt.Errorf("kube drain %s: %w", d.node, err)
	}
	for i := range evict {
		p := &evict[i]
		d.pending = append(d.pending, &evictee{namespace: p.Namespace, name: p.Name, uid: p.UID, wait: PodWait{Pod: podName(p)}})
	}
	pause := ctxwait.NewBackoff(d.o.Poll)
	for {
		if err := d.evictDue(ctx); err != nil {
			return err
		}
		if len(d.pending) == 0 {
			return nil
		}
		if err := pause.Sleep(ctx); err != nil {
			return err
		}
		if err := d.look(ctx); err != nil {
			return err
		}
		if len(d.pending) == 0 {
			return nil
		}
		if d.o.Progress != nil {
			d.o.Progress(d.progress())
		}
	}
}

// evictDue evicts the pending pods not yet evicted whose retry is due.
func (d *drain) evictDue(ctx context.Context) error {
	now := time.Now()
	left := d.pending[:0]
	for _, e := range d.pending {
		if e.evicted || now.Before(e.retryAt) {
			left = append(left, e)
			continue
		}
		err := d.c.evict(ctx, e.namespace, e.name)
		switch {
		case err == nil:
			e.evicted, e.wait.Reason, e.wait.Detail = true, WaitTerminating, ""
		case apierrors.IsNotFound(err):
			continue // gone already
		case apierrors.IsTooManyRequests(err):
			e.retryAt, e.wait.Reason, e.wait.Detail = now.Add(d.o.EvictErrorRetryDelay), WaitDisruptionBudget, causeOf(err)
		case apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			e.retryAt, e.wait.Reason, e.wait.Detail = now.Add(d.o.EvictErrorRetryDelay), WaitNamespaceTerminating, ""
		default:
			return err
		}
		left = append(left, e)
	}
	d.pending = left
	return nil
}

// look lists the node's pods and drops the pending ones gone (or replaced:
// another UID under the name is not the pod evicted). A failed list is
// retried at the next poll: the pods stay pending, so the drain never
// passes on a look it did not get.
func (d *drain) look(ctx context.Context) error {
	pods, err := d.c.podsOn(ctx, d.node)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		d.lastErr = err
		return nil
	}
	d.lastErr = nil
	there := make(map[types.UID]bool, len(pods))
	for i := range pods {
		there[pods[i].UID] = true
	}
	left := d.pending[:0]
	for _, e := range d.pending {
		if there[e.uid] {
			left = append(left, e)
		}
	}
	d.pending = left
	return nil
}

func (d *drain) progress() DrainProgress {
	p := DrainProgress{Node: d.node}
	for _, e := range d.pending {
		p.Waiting = append(p.Waiting, e.wait)
	}
	return p
}

// timedOut is the error of a drain out of time, naming the pods still
// there and why.
func (d *drain) timedOut() error {
	if !d.listed {
		return fmt.Errorf("kube drain %s: timed out after %s listing its pods", d.node, d.o.Timeout)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kube drain %s: timed out after %s with %d pod(s) still there:", d.node, d.o.Timeout, len(d.pending))
	for i, e := range d.pending {
		if i > 0 {
			b.WriteString(",")
		}
		reason := e.wait.Reason
		if reason == "" {
			reason = "not evicted yet"
		}
		if e.wait.Detail != "" {
			reason += ": " + e.wait.Detail
		}
		fmt.Fprintf(&b, " %s (%s)", e.wait.Pod, reason)
	}
	if d.lastErr != nil {
		fmt.Fprintf(&b, " (last look: %v)", d.lastErr)
	}
	return errors.New(b.String())
}

// causeOf is the first cause's message of an API error ("The disruption
// budget web needs 2 healthy pods and has 2 currently"), else its message.
func causeOf(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err.Error()
	}
	s := status.Status()
	if s.Details != nil && len(s.Details.Causes) > 0 && s.Details.Causes[0].Message != "" {
		return s.Details.Causes[0].Message
	}
	return s.Message
}
