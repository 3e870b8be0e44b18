package openstack

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/talosc/talosc/pkg/provider"
)

// How a second server of one name can appear: a create whose answer was
// lost is looked for for provider.LateWindow before it is sent again
// (settle), but a busy nova-api may apply it later still. Both servers were
// given the machine's one port. On the real cloud both builds bind it in
// turn: one ends in ERROR ("Failed to allocate the network(s)"), and its
// cleanup may unbind the port from the other, which stays ACTIVE without a
// network. A server talosc makes has no NIC but the machine's port, so one
// that holds no port carries no node. The next run's inventory keeps the
// server that holds a port and records the others for ReconcileMachines or
// DestroyMachines to delete; when none holds one, every copy goes and the
// machine is created again.

// serverTwins are the owned servers the inventory found to be unused second
// servers of a name, by id.
type serverTwins struct {
	mu   sync.Mutex
	byID map[string]servers.Server
}

func (t *serverTwins) add(s servers.Server) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]servers.Server{}
	}
	t.byID[s.ID] = s
}

// take returns the recorded servers, by name and id, and forgets them.
func (t *serverTwins) take() []servers.Server {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.SortedFunc(maps.Values(t.byID), func(a, b servers.Server) int {
		return strings.Compare(a.Name+" "+a.ID, b.Name+" "+b.ID)
	})
	t.byID = nil
	return out
}

// oneServerPerName returns list with one server per name: of two or more,
// the one in use (serverUses) is kept and the others are recorded in
// c.twins; when none is in use, all are recorded and the name is left out
// (the machine is missing, and created again); two in use are refused,
// named (provider.DedupeOwned).
func (c *Cloud) oneServerPerName(ctx context.Context, list []servers.Server) ([]servers.Server, error) {
	byName := map[string][]servers.Server{}
	for _, s := range list {
		byName[s.Name] = append(byName[s.Name], s)
	}
	var out []servers.Server
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		group := byName[name]
		if len(group) == 1 {
			out = append(out, group[0])
			continue
		}
		used, err := c.serverUses(ctx, group)
		if err == nil && !slices.Contains(used, true) {
			c.opts.Logf("openstack: server %s: %d owned servers of this name (a create applied late) and none holds a port: deleting every one, the machine is created again", name, len(group))
			for _, s := range group {
				c.twins.add(s)
			}
			continue
		}
		keep, drop, err := judge(c, "server "+name, group, func(s servers.Server) string { return s.ID }, used, err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, keep)
		for _, s := range drop {
			c.twins.add(s)
		}
	}
	return out, errors.Join(errs...)
}

// serverUses reports, for each of several owned servers of one name,
// whether it is in use: a port is bound to it, or it is still building
// (Nova binds the port during the build). An ACTIVE server without a port
// has no network and carries no node. A port list that fails counts every
// one in use.
func (c *Cloud) serverUses(ctx context.Context, group []servers.Server) ([]bool, error) {
	used := make([]bool, len(group))
	for i, s := range group {
		if s.Status == "BUILD" {
			used[i] = true
			continue
		}
		bound, err := listAll(ctx, ports.List(c.network, ports.ListOpts{DeviceID: s.ID}), ports.ExtractPorts)
		if err != nil {
			return nil, wrap(err, "list the ports bound to server %s", s.ID)
		}
		used[i] = len(bound) > 0
	}
	return used, nil
}

// dropTwins deletes (through plan) the unused second servers the inventory
// recorded, each with its boot volume; the machine's port, bound to the
// server kept, stays.
func (c *Cloud) dropTwins(ctx context.Context, cluster string, plan *provider.Plan) error {
	var errs []error
	for _, s := range c.twins.take() {
		errs = append(errs, c.dropServer(ctx, cluster, plan, s))
	}
	return errors.Join(errs...)
}
