package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/kube/kubenode"
)

// Probe reports whether the API is up: it lists the nodes up to attempts
// times (at least once), interval apart, and is up as soon as one list
// succeeds. A single failure is never "down" (I-3): up is false, with the
// last error, only after every attempt failed (the reference:
// ProbeAttempts, ProbeInterval). A canceled ctx ends the probe with its
// error, which is not a verdict.
func (c *Client) Probe(ctx context.Context, attempts int, interval time.Duration) (up bool, err error) {
	for i := range max(attempts, 1) {
		if i > 0 {
			if serr := ctxwait.Sleep(ctx, interval); serr != nil {
				return false, serr
			}
		}
		if _, err = c.nodes(ctx, c.request); err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	return false, err
}

// ServerVersion returns the API server's version ("v1.35.4"), asking up to
// three times, Options.RetryInterval apart; after that it fails (I-13:
// never guess the running version).
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	var (
		v   string
		err error
	)
	for i := range versionAttempts {
		if i > 0 {
			if serr := ctxwait.Sleep(ctx, c.opts.RetryInterval); serr != nil {
				return "", serr
			}
		}
		err = c.request(ctx, "server version", func(ctx context.Context) error {
			body, verr := c.core.Get().AbsPath("/version").Do(ctx).Raw()
			if verr != nil {
				return verr
			}
			var info version.Info
			if verr := json.Unmarshal(body, &info); verr != nil {
				return fmt.Errorf("unable to parse the server version: %w", verr)
			}
			v = info.GitVersion
			return nil
		})
		if err == nil {
			return v, nil
		}
	}
	return "", fmt.Errorf("%w (after %d attempts)", err, versionAttempts)
}

// Node is a Kubernetes Node as the nodes phase reads it (plain data in
// kubenode, so the state document's types carry it without client-go).
type Node = kubenode.Node

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	return c.nodes(ctx, c.idempotent)
}

// nodes lists the nodes through send: idempotent, or a single request for
// the loops that poll themselves (Probe, WaitReady).
func (c *Client) nodes(ctx context.Context, send func(context.Context, string, func(context.Context) error) error) ([]Node, error) {
	var list corev1.NodeList
	err := send(ctx, "list nodes", func(ctx context.Context) error {
		return c.core.Get().Resource("nodes").VersionedParams(&metav1.ListOptions{}, c.params).Do(ctx).Into(&list)
	})
	if err != nil {
		return nil, err
	}
	out := make([]Node, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, nodeOf(&list.Items[i]))
	}
	return out, nil
}

func nodeOf(n *corev1.Node) Node {
	out := Node{
		Name: n.Name, KubeletVersion: n.Status.NodeInfo.KubeletVersion, OSImage: n.Status.NodeInfo.OSImage,
		Unschedulable: n.Spec.Unschedulable, Labels: n.Labels,
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out.InternalIP = a.Address
			break
		}
	}
	for i := range n.Spec.Taints {
		out.Taints = append(out.Taints, n.Spec.Taints[i].ToString())
	}
	return out
}

// WaitReady waits until every named node exists and is Ready, polling
// (backing off from ctxwait.FirstPoll to every poll) for up to budget (the reference: ReadyBudget, ReadyPoll). progress,
// if not nil, gets the count after every poll that listed the nodes. A
// failed list is retried at the next poll. It returns the last list.
func (c *Client) WaitReady(ctx context.Context, names []string, budget, poll time.Duration, progress func(ready, total int)) ([]Node, error) {
	// The budget ends the polling, never a list in flight: the last look is
	// a whole one (each list is bounded by the request timeout).
	deadline := time.Now().Add(budget)
	var lastErr error
	var waiting []string
	pause := ctxwait.NewBackoff(poll)
	for {
		nodes, err := c.nodes(ctx, c.request)
		if err == nil {
			waiting = notReady(nodes, names)
			if progress != nil {
				progress(len(names)-len(waiting), len(names))
			}
			if len(waiting) == 0 {
				return nodes, nil
			}
		}
		lastErr = err
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if err := ctxwait.Sleep(ctx, min(pause.Next(), left)); err != nil {
			return nil, err
		}
	}
	msg := fmt.Sprintf("kube: nodes not Ready after %s", budget)
	if len(waiting) > 0 {
		msg += ": " + strings.Join(waiting, ", ")
	}
	if lastErr != nil {
		return nil, fmt.Errorf("%s: %w", msg, lastErr)
	}
	return nil, errors.New(msg)
}

// notReady describes the named nodes that are missing or not Ready.
func notReady(nodes []Node, names []string) []string {
	var out []string
	for _, name := range names {
		i := slices.IndexFunc(nodes, func(n Node) bool { return n.Name == name })
		switch {
		case i < 0:
			out = append(out, name+" (not registered)")
		case !nodes[i].Ready:
			out = append(out, name+" (NotReady)")
		}
	}
	return out
}
