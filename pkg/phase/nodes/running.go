package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// running is what one existing node runs, as it answered.
type running struct {
	// talos is its Talos version ("v1.13.8").
	talos string
	// schematic is its Image Factory schematic ID, "" when it reports
	// none (a node not booted from a factory image).
	schematic string
}

// readRunning asks every existing desired node (onlyNew: those not asked
// yet), through the first control plane, which Talos version and
// schematic it runs (I-R3). A node
// that does not answer leaves whether it needs an upgrade, and at which
// version its configuration is generated, unknown: the run refuses.
func (r *run) readRunning(ctx context.Context, onlyNew bool) error {
	var hosts, addrs []string
	for _, m := range r.desired {
		if _, ok := r.obs.inv.Find(m.Hostname); !ok {
			continue
		}
		if _, known := r.obs.runningOf(m.Hostname); onlyNew && known {
			continue
		}
		a, ok := r.obs.address(m.Hostname)
		if !ok {
			return fmt.Errorf("no address known for %s: which Talos it runs cannot be read; refusing to go on with a node in an unknown state", m.Hostname)
		}
		hosts, addrs = append(hosts, m.Hostname), append(addrs, a)
	}
	if len(hosts) == 0 {
		return nil
	}
	c, _, err := r.clients.talosSession(ctx, r.id, r.obs)
	if err != nil {
		return err
	}
	got := make([]running, len(hosts))
	errs := provider.FanOut(ctx, len(hosts), func(ctx context.Context, i int) error {
		v, err := c.Version(ctx, addrs[i])
		if err != nil {
			return fmt.Errorf("version: %w", err)
		}
		s, err := c.Schematic(ctx, addrs[i])
		if err != nil {
			return fmt.Errorf("schematic: %w", err)
		}
		got[i] = running{talos: v, schematic: s}
		return nil
	})
	var unread []string
	for i, err := range errs {
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", hosts[i], err))
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("%d node(s) did not say which Talos they run, so whether they need an upgrade is unknown; refusing to go on (bring them back, or remove them from cluster.yaml): %s",
			len(unread), strings.Join(unread, "; "))
	}
	for i, h := range hosts {
		r.obs.setRunning(h, got[i])
	}
	return nil
}

// talosVersionOf is the Talos version m's configuration is generated for:
// the one it runs when it exists (its document layout, I-13's rule for
// Talos), the pinned one for a new machine.
func (o *observed) talosVersionOf(m config.Machine, pinned string) string {
	if v, ok := o.runningOf(m.Hostname); ok {
		return v.talos
	}
	return pinned
}
