package nodes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/talosapi"
	"github.com/talosc/talosc/pkg/ui"
)

// rebootInto reboots an installed node (a control plane hands etcd
// leadership away first) and waits for it to boot again, answer at the
// new version and schematic, and, for a worker, be Ready. A node that
// boots back into its old installation (Talos rolled it back) fails.
func (r *run) rebootInto(ctx context.Context, u talosUpgrade) error {
	m := u.machine
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	if m.Role == config.RoleControlPlane && r.cfg.ControlPlane.Count > 1 {
		forfeitLeadership(ctx, r.in.Out, c, m.Hostname, u.address, "rebooting it anyway")
	}
	r.in.Out.Info("rebooting %s into %s", m.Hostname, u.to)
	prev, err := c.Reboot(ctx, u.address)
	for attempt := 1; errors.Is(err, talosapi.ErrAnswerLost); attempt++ {
		// It may be rebooting: a boot ID that changes within the settle
		// grace says so; one that does not, that the request never
		// arrived, so it is asked again, up to rebootAttempts times.
		werr := c.WaitRebooted(ctx, u.address, prev, r.scaled(settleGrace), r.scaled(settlePoll), r.waiting(m.Hostname))
		if werr == nil {
			err = nil
			break
		}
		if attempt == rebootAttempts {
			break
		}
		r.in.Out.Warn("%s: the answer to its reboot was lost and it did not reboot (%v); asking again", m.Hostname, werr)
		prev, err = c.Reboot(ctx, u.address)
	}
	if err != nil {
		return fmt.Errorf("reboot of %s: %w", m.Hostname, err)
	}
	if err := r.waiter().nodeBack(ctx, m, prev, r.scaled(upgradeBudget)); err != nil {
		return fmt.Errorf("%s did not come back after its upgrade; stopping the rollout: %w", m.Hostname, err)
	}
	return r.waiter().installedImage(ctx, c, u)
}

// rebootAttempts is how often a reboot whose answer was lost and that
// did not happen is asked for (a request refused on the way, as a 503 of
// a proxy, reaches nothing).
const rebootAttempts = 3

// installAttempts bounds how often one node's installer is asked for
// when its answers are lost.
const installAttempts = 3

// install runs the node's installer, again when an answer was lost:
// installing the same image twice writes the same partition twice, while
// a failed installer, or one already running, refuses.
func install(ctx context.Context, out *ui.Printer, c talosAPI, u talosUpgrade) error {
	var err error
	for range installAttempts {
		err = c.Upgrade(ctx, u.address, u.installer, installProgress(out, u.machine.Hostname))
		if !errors.Is(err, talosapi.ErrAnswerLost) {
			return err
		}
		out.Warn("%s: %v; running its installer again", u.machine.Hostname, err)
	}
	return err
}

// installProgress reports the installer's lines on out, throttled.
func installProgress(out *ui.Printer, host string) func(string) {
	var latest string
	report := throttle(func(time.Duration) { out.Info("  %s: %s", host, latest) })
	return func(line string) {
		latest = line
		report(0)
	}
}

// shortID is a schematic ID's first 12 characters ("none" when empty).
func shortID(id string) string {
	switch {
	case id == "":
		return "none"
	case len(id) > 12:
		return id[:12]
	}
	return id
}
