package nodes

import (
	"context"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/config"
)

// nodeBack waits for a node that was restarted: when previousBootID is
// known, until it answers with another boot ID within grace
// (I-R7 as Talos reports it: a reboot that happened, not apid dropping,
// which may be missed), else until its Talos API answers; then, for a
// worker, until its Kubernetes node is Ready. A control plane's health
// is the rollout's barrier.
func (r *run) nodeBack(ctx context.Context, m config.Machine, previousBootID string, grace time.Duration) error {
	addr, ok := r.obs.address(m.Hostname)
	if !ok {
		return fmt.Errorf("no address known for %s", m.Hostname)
	}
	c, _, err := r.obs.talosSession(ctx)
	if err != nil {
		return err
	}
	if previousBootID != "" {
		if err := c.WaitRebooted(ctx, addr, previousBootID, grace, r.scaled(settlePoll), r.waiting(m.Hostname)); err != nil {
			return fmt.Errorf("%s did not reboot within %s: %w", m.Hostname, grace, err)
		}
	}
	if err := c.WaitReachable(ctx, addr, r.scaled(reachableBudget), r.scaled(reachablePoll), r.waiting(m.Hostname)); err != nil {
		return err
	}
	if m.Role == config.RoleControlPlane {
		return nil
	}
	kc, err := r.obs.kubeClient()
	if err != nil {
		return err
	}
	_, err = kc.WaitReady(ctx, []string{m.Hostname}, r.scaled(readyBudget), r.scaled(readyPoll), nil)
	return err
}
