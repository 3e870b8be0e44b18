package talosapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	clusterapi "github.com/siderolabs/talos/pkg/machinery/api/cluster"
	machineapi "github.com/siderolabs/talos/pkg/machinery/api/machine"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Version returns the Talos version tag node runs ("v1.14.1").
func (c *Client) Version(ctx context.Context, node string) (string, error) {
	var tag string
	err := c.read(ctx, "Version", node, func(ctx context.Context) (err error) {
		tag, err = c.version(ctx)
		return err
	})
	return tag, err
}

// version is one Version RPC.
func (c *Client) version(ctx context.Context) (string, error) {
	resp, err := c.c.Version(ctx)
	if err != nil {
		return "", err
	}
	msgs := resp.GetMessages()
	if len(msgs) == 0 {
		return "", errors.New("empty answer")
	}
	return msgs[0].GetVersion().GetTag(), nil
}

// WaitReachable polls node's Version until apid answers, for up to budget
// (the reference: 900 s, polled every 15 s, I-X2), the pauses backing off
// from ctxwait.FirstPoll to poll. progress, if not nil, is told the time
// waited after every failed attempt.
func (c *Client) WaitReachable(ctx context.Context, node string, budget, poll time.Duration, progress func(elapsed time.Duration)) error {
	start := time.Now()
	err := pollUntil(ctx, budget, poll, func(ctx context.Context) (bool, error) {
		err := c.call(ctx, "Version", node, c.opts.CallTimeout, func(ctx context.Context) error {
			_, err := c.version(ctx)
			return err
		})
		if err != nil && progress != nil {
			progress(time.Since(start))
		}
		return err == nil, err
	})
	if err != nil {
		return fmt.Errorf("talos API on %s not reachable: %w", node, err)
	}
	return nil
}

// Bootstrap bootstraps etcd on the control plane node. It is idempotent
// (I-8): an already bootstrapped node (AlreadyExists) is success. While Talos answers that bootstrap is not available
// yet (FailedPrecondition) or cannot be reached (Unavailable), it retries
// for up to budget, backing off from ctxwait.FirstPoll to every
// Options.RetryInterval (the reference: 5 minutes).
func (c *Client) Bootstrap(ctx context.Context, node string, budget time.Duration) error {
	return pollUntil(ctx, budget, c.opts.RetryInterval, func(ctx context.Context) (bool, error) {
		err := c.call(ctx, "Bootstrap", node, c.opts.CallTimeout, func(ctx context.Context) error {
			err := c.c.Bootstrap(ctx, &machineapi.BootstrapRequest{})
			if err != nil && alreadyBootstrapped(err) {
				return nil
			}
			return err
		})
		return err == nil || !retryBootstrap(err), err
	})
}

// alreadyBootstrapped reports Talos's answer for a bootstrapped node,
// decided by the gRPC code alone: machined's Bootstrap answers
// AlreadyExists ("etcd data directory is not empty") when the node's etcd
// has data (Talos v1.13 v1alpha1_server.go). The same words with another
// code (Unknown, from the bootstrapper when a concurrent bootstrap filled
// the directory first) or any other "already" text prove nothing: they
// fail the call, and the next converge reads the node's etcd.
func alreadyBootstrapped(err error) bool {
	return status.Code(err) == codes.AlreadyExists
}

// retryBootstrap reports the answers worth another Bootstrap attempt.
func retryBootstrap(err error) bool {
	switch status.Code(err) { //nolint:exhaustive // everything else is final
	case codes.FailedPrecondition, codes.Unavailable:
		return true
	}
	// A lost answer (apid's DeadlineExceeded, or the attempt's own bound
	// running out on a call that hung): asked again, a node that did
	// bootstrap answers that it already is.
	return answerLost(err) || errors.Is(err, context.DeadlineExceeded)
}

// Kubeconfig returns an admin kubeconfig from node, which must be a real
// control plane (never the kube-API VIP, I-A1).
func (c *Client) Kubeconfig(ctx context.Context, node string) ([]byte, error) {
	var kc []byte
	err := c.read(ctx, "Kubeconfig", node, func(ctx context.Context) (err error) {
		kc, err = c.c.Kubeconfig(ctx)
		return err
	})
	return kc, err
}

// HealthOptions is one server-side health check.
type HealthOptions struct {
	// ControlPlanes and Workers are the addresses of the nodes the check
	// expects; both empty lets Talos discover them.
	ControlPlanes, Workers []string
	// K8sEndpoint is the Kubernetes API the check uses (talosctl health
	// --k8s-endpoint): the internal VIP, so no NAT hairpin (I-A5).
	K8sEndpoint string
	// Timeout is how long the check waits for the cluster to be healthy.
	Timeout time.Duration
	// Progress, if not nil, gets every progress line.
	Progress func(line string)
}

// Health runs Talos's server-side cluster health check (talosctl health
// --server) on the endpoint and fails, with the last progress line, when
// the cluster is not healthy within o.Timeout.
func (c *Client) Health(ctx context.Context, o HealthOptions) error {
	return c.call(ctx, "HealthCheck", "", o.Timeout+c.opts.CallTimeout, func(ctx context.Context) error {
		stream, err := c.c.ClusterHealthCheck(ctx, o.Timeout, &clusterapi.ClusterInfo{
			ControlPlaneNodes: o.ControlPlanes, WorkerNodes: o.Workers, ForceEndpoint: o.K8sEndpoint,
		})
		if err != nil {
			return err
		}
		last := ""
		for {
			msg, err := stream.Recv()
			switch {
			case errors.Is(err, io.EOF):
				return nil
			case err != nil && last != "":
				return fmt.Errorf("cluster not healthy after %s: %s: %w", o.Timeout, last, err)
			case err != nil:
				return err
			}
			last = msg.GetMessage()
			if o.Progress != nil {
				o.Progress(last)
			}
		}
	})
}
