package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// machineParts are one machine's own resources, read (and proven owned)
// before any of them is deleted.
type machineParts struct {
	host string
	// server is the Nova server id, "" when the server is gone.
	server string
	// ports are the owned machine ports named after the machine.
	ports []string
	// volume is the server's boot volume, "" when it has none.
	volume string
}

// detail lists the parts for the plan: "server <id>, port <id>, boot
// volume <id>".
func (p machineParts) detail() string {
	var what []string
	if p.server != "" {
		what = append(what, "server "+p.server)
	}
	for _, id := range p.ports {
		what = append(what, "port "+id)
	}
	if p.volume != "" {
		what = append(what, "boot volume "+p.volume)
	}
	return strings.Join(what, ", ")
}

// DeleteMachine is provider.Compute.DeleteMachine: it re-reads the server
// by id, refusing one without the ownership tags or renamed since the
// inventory, and finds its boot volume and its owned port (by tags and
// name, bound to it or to nothing); then, as one change, it deletes the
// server, waits until Nova no longer lists it, deletes the port and
// deletes the boot volume unless Nova already did (delete_on_termination),
// waiting until Cinder no longer lists it. What is already gone is
// skipped; nothing left is no change.
func (c *Cloud) DeleteMachine(ctx context.Context, m provider.Machine, plan *provider.Plan) error {
	cluster := c.cluster
	parts, err := c.readMachine(ctx, cluster.Name, m)
	if err != nil {
		return fmt.Errorf("delete server %s: %w", m.Hostname, err)
	}
	if parts.server == "" && len(parts.ports) == 0 && parts.volume == "" {
		return nil
	}
	change := state.Change{Action: state.ActionDelete, Kind: KindServer, Name: m.Hostname, Detail: parts.detail()}
	return plan.Do(ctx, change, func(ctx context.Context) error { return c.deleteParts(ctx, cluster.Name, parts) })
}

// attachedVolumes is the part of a server Nova answers at microversion
// 2.3+ that gophercloud's Server drops: which volumes go with it.
type attachedVolumes struct {
	Volumes []struct {
		ID string `json:"id"`
	} `json:"os-extended-volumes:volumes_attached"`
}

// readMachine reads m's server, boot volume and ports, and refuses what is
// not provably m's (reference I-F1).
func (c *Cloud) readMachine(ctx context.Context, cluster string, m provider.Machine) (machineParts, error) {
	parts := machineParts{host: m.Hostname}
	if m.ID == "" {
		return parts, errors.New("the inventory entry has no server id; rerun to read the inventory again")
	}
	res := servers.Get(ctx, c.compute, m.ID)
	s, err := res.Extract()
	switch {
	case isNotFound(err):
	case err != nil:
		return parts, wrap(err, "read server %s", m.ID)
	case s.TenantID != c.projectID:
		return parts, fmt.Errorf("refusing to delete server %s (%s): it is of project %s, not of the application credential's project %s", s.Name, s.ID, s.TenantID, c.projectID)
	case !c.owner(cluster).tagged(serverAttrs(s)):
		return parts, fmt.Errorf("refusing to delete server %s (%s): it lacks the ownership tags %s and %s", s.Name, s.ID, TagManagedBy, ClusterTag(cluster))
	case s.Name != m.Hostname:
		return parts, fmt.Errorf("refusing to delete server %s: it is named %s now, not %s; rerun to read the inventory again", s.ID, s.Name, m.Hostname)
	default:
		parts.server = s.ID
		var att attachedVolumes
		if err := res.ExtractInto(&att); err != nil {
			return parts, wrap(err, "read the volumes of server %s", s.ID)
		}
		if parts.volume, err = c.bootVolume(ctx, s.ID, att); err != nil {
			return parts, err
		}
	}
	parts.ports, err = c.machinePorts(ctx, cluster, m)
	return parts, err
}

// bootVolume finds, among the volumes attached to server, its boot
// volume (see bootVolumes); data volumes someone attached are not the
// machine's.
func (c *Cloud) bootVolume(ctx context.Context, server string, att attachedVolumes) (string, error) {
	vols := make([]volumes.Volume, 0, len(att.Volumes))
	for _, a := range att.Volumes {
		v, err := volumes.Get(ctx, c.volume, a.ID).Extract()
		if isNotFound(err) {
			continue
		}
		if err != nil {
			return "", wrap(err, "read volume %s of server %s", a.ID, server)
		}
		vols = append(vols, *v)
	}
	if v, ok := bootVolumes(vols)[server]; ok {
		return v.ID, nil
	}
	return "", nil
}

// machinePorts lists m's owned machine ports: named after it, carrying
// the ownership and role tags, bound to its server or to nothing. An
// owned port of that name bound elsewhere is refused; a same-named port
// without the tags is not ours and is left alone.
func (c *Cloud) machinePorts(ctx context.Context, cluster string, m provider.Machine) ([]string, error) {
	list, err := listOwned(ctx, c.owner(cluster), ports.ExtractPorts, portAttrs, ports.List(c.network, ports.ListOpts{Name: m.Hostname, Tags: ClusterTag(cluster), ProjectID: c.projectID}))
	if err != nil {
		return nil, wrap(err, "list the ports named %s", m.Hostname)
	}
	var out []string
	for _, p := range list {
		if !slices.ContainsFunc(p.Tags, func(t string) bool { return strings.HasPrefix(t, RoleTag("")) }) {
			continue
		}
		if p.DeviceID != "" && p.DeviceID != m.ID {
			return nil, fmt.Errorf("refusing to delete port %s (%s): it is bound to %s %s, not to server %s", p.Name, p.ID, p.DeviceOwner, p.DeviceID, m.ID)
		}
		out = append(out, p.ID)
	}
	return out, nil
}

// deleteParts deletes the server and waits until it is gone, then its
// ports (unbound only once the server is gone) and its boot volume.
func (c *Cloud) deleteParts(ctx context.Context, cluster string, p machineParts) error {
	if p.server != "" {
		if err := c.deleteServer(ctx, p.server); err != nil {
			return err
		}
		if _, err := c.waitServers(ctx, cluster, map[string]string{p.server: p.host}, "gone", serverGone); err != nil {
			return err
		}
	}
	for _, id := range p.ports {
		if err := c.deletePort(ctx, id); err != nil && !isNotFound(err) {
			return wrap(err, "delete port %s", id)
		}
	}
	if p.volume != "" {
		return c.deleteVolume(ctx, p.volume)
	}
	return nil
}

// serverGone ends the wait for a deleted server: it is no longer listed
// (Nova answers 404 for it).
func serverGone(s *servers.Server) (bool, error) { return s == nil, nil }

// DestroyMachines deletes the inventory's servers and the unused second
// servers of a name it found (at most provider.MaxConcurrent
// requests at a time) and waits until every one is gone.
func (c *Cloud) DestroyMachines(ctx context.Context, inv *provider.Inventory, plan *provider.Plan) error {
	cluster := c.cluster
	var mu sync.Mutex
	deleted := map[string]string{}
	errs := provider.FanOut(ctx, len(inv.Machines), func(ctx context.Context, i int) error {
		m := inv.Machines[i]
		change := state.Change{Action: "delete", Kind: KindServer, Name: m.Hostname, Detail: "server " + m.ID + " and its boot volume"}
		return plan.Do(ctx, change, func(ctx context.Context) error {
			if err := c.deleteServer(ctx, m.ID); err != nil {
				return err
			}
			mu.Lock()
			deleted[m.ID] = m.Hostname
			mu.Unlock()
			return nil
		})
	})
	errs = append(errs, c.dropTwins(ctx, cluster.Name, plan))
	werr := plan.Verify(ctx, func(ctx context.Context) error {
		_, err := c.waitServers(ctx, cluster.Name, deleted, "gone", serverGone)
		return err
	})
	return errors.Join(append(errs, werr)...)
}

// deleteServer asks Nova to delete a server; one already gone is no error.
func (c *Cloud) deleteServer(ctx context.Context, id string) error {
	if err := servers.Delete(ctx, c.compute, id).ExtractErr(); err != nil && !isNotFound(err) {
		return wrap(err, "nova")
	}
	return nil
}

// volumeDeletable are the statuses Cinder deletes a volume in.
var volumeDeletable = []string{"available", "error", "error_restoring", "error_extending", "error_managing"}

// deleteVolume deletes a detached volume and waits, polling (backing off
// to every Options.Poll) within Options.Wait, until Cinder no longer
// lists it. A
// volume Nova is deleting (delete_on_termination) or still detaching is
// waited for; one Cinder failed to delete is an error.
func (c *Cloud) deleteVolume(ctx context.Context, id string) error {
	wait, cancel := context.WithTimeout(ctx, c.opts.Wait)
	defer cancel()
	pause := ctxwait.NewBackoff(c.opts.Poll)
	for {
		v, err := volumes.Get(wait, c.volume, id).Extract()
		switch {
		case isNotFound(err):
			return nil
		case err != nil:
			return wrap(err, "read boot volume %s", id)
		case v.Status == "error_deleting":
			return fmt.Errorf("boot volume %s: Cinder failed to delete it (status error_deleting)", id)
		case slices.Contains(volumeDeletable, v.Status):
			if err := volumes.Delete(wait, c.volume, id, nil).ExtractErr(); err != nil && !isNotFound(err) {
				return wrap(err, "delete boot volume %s", id)
			}
		}
		if err := pause.Sleep(wait); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("boot volume %s: stopped waiting for it to go: %w (status %s)", id, ctx.Err(), v.Status)
			}
			return fmt.Errorf("boot volume %s: not gone after %s (status %s)", id, c.opts.Wait, v.Status)
		}
	}
}

// portHolder reports, for each of several owned servers of one machine,
// which one the machine's port is bound to: a port is bound to one server
// at most, so that one is the machine's and the others are unused. Nova
// binds the port while a server builds, so an unbound port is read again
// until it is bound to one of them or provider.LateWindow has passed
// (then none is in use). A port that cannot be read fails, and every
// server then counts as in use.
func (c *Cloud) portHolder(ctx context.Context, port string, found []servers.Server) ([]bool, error) {
	holder, err := provider.AwaitLate(ctx, provider.LateWindow(c.opts.RequestTimeout), func(ctx context.Context) ([]string, error) {
		p, err := ports.Get(ctx, c.network, port).Extract()
		if err != nil {
			return nil, wrap(err, "read port %s", port)
		}
		if slices.ContainsFunc(found, func(s servers.Server) bool { return s.ID == p.DeviceID }) {
			return []string{p.DeviceID}, nil
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	used := make([]bool, len(found))
	for i, s := range found {
		used[i] = slices.Contains(holder, s.ID)
	}
	return used, nil
}

// dropServer deletes an unused duplicate of a machine's server through
// plan and waits until Nova no longer lists it. Its boot volume goes with
// it (delete_on_termination); the machine's port, not bound to it, stays.
func (c *Cloud) dropServer(ctx context.Context, cluster string, plan *provider.Plan, s servers.Server) error {
	change := state.Change{Action: state.ActionDelete, Kind: KindServer, Name: s.Name, Detail: "server " + s.ID + ", a duplicate made by a create applied late"}
	return plan.Do(ctx, change, func(ctx context.Context) error {
		if err := c.deleteServer(ctx, s.ID); err != nil {
			return err
		}
		_, err := c.waitServers(ctx, cluster, map[string]string{s.ID: s.Name}, "gone", serverGone)
		return err
	})
}
