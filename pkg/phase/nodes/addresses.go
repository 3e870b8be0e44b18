package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// resolveAddresses waits until every desired machine has a real address:
// the network phase's (OpenStack ports, static SDN addresses) or, for
// DHCP networks, what the provider reports once the machine runs (the
// Proxmox guest agent), polling the inventory (reference §3.1 step 12:
// 600 s, 15 s apart). A real run only: a plan waits for nothing.
func (r *run) resolveAddresses(ctx context.Context) error {
	first := true
	var missing []string
	check := func(ctx context.Context) (string, error) {
		if !first {
			if err := r.obs.refreshInventory(ctx, r.cloud); err != nil {
				return "", err
			}
		}
		first = false
		missing = missing[:0]
		for _, m := range r.desired {
			if _, ok := r.obs.address(m.Hostname); !ok {
				missing = append(missing, m.Hostname)
			}
		}
		return strings.Join(missing, ", "), nil
	}
	return r.waiter().poll(ctx, pacing{budget: r.scaled(addressBudget), every: r.scaled(addressPoll)}, check, func(missing string) error {
		return fmt.Errorf("no address reported for %s after %s: check that the machines run and their guest agent answers", missing, r.scaled(addressBudget))
	})
}

// writeTalosconfig (re)writes talosconfig for the first control plane's
// real address (never the VIP, I-A1).
func (r *run) writeTalosconfig(context.Context) error {
	cp1, _ := r.obs.address(r.cp1().Hostname)
	var forbidden []string
	if r.obs.net != nil {
		forbidden = []string{r.obs.vip(), r.obs.netKubernetes().Advertised}
	}
	ep, err := identity.TalosEndpoint(identity.EndpointInput{
		Hostname:        r.cp1().Hostname,
		Address:         cp1,
		TailscaleActive: r.cfg.Tailscale.Active(),
		Forbidden:       forbidden,
	})
	if err != nil {
		return r.plan.Pending(err, state.Change{Action: state.ActionCreate, Kind: kindFile, Name: config.TalosconfigFile, Detail: "endpoint: the first control plane, once its address is allocated"})
	}
	r.out.TalosEndpoint = ep
	path, exists := r.clientFile(config.TalosconfigFile)
	action := state.ActionCreate
	if exists {
		if recorded, ok, _ := identity.ReadTalosconfigEndpoint(path); ok && recorded == ep {
			return nil
		}
		action = state.ActionUpdate
	}
	return r.plan.Do(context.Background(), state.Change{Action: action, Kind: kindFile, Name: config.TalosconfigFile, Detail: "endpoint " + ep},
		func(context.Context) error { return identity.WriteTalosconfig(path, r.id, r.cfg.Name, ep) })
}
