package openstack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/ctxwait"
	"github.com/talosc/talosc/pkg/provider"
)

// Inventory lists the cluster's owned servers with one tag-filtered server
// list and, when there are any, one volume list for their boot disks. Of
// several owned servers of one name, the one in use is listed and the
// others are kept for ReconcileMachines or DestroyMachines to delete
// (oneServerPerName).
func (c *Cloud) Inventory(ctx context.Context) (*provider.Inventory, error) {
	cluster := c.cluster
	list, err := c.ownedServers(ctx, cluster.Name)
	if err != nil {
		return nil, err
	}
	if list, err = c.oneServerPerName(ctx, list); err != nil {
		return nil, err
	}
	inv := &provider.Inventory{Machines: make([]provider.Machine, 0, len(list))}
	if len(list) == 0 {
		return inv, nil
	}
	disks, err := c.bootDiskSizes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		m := machineOf(&list[i], cluster.Name)
		m.DiskGB = disks[m.ID]
		inv.Machines = append(inv.Machines, m)
	}
	slices.SortStableFunc(inv.Machines, func(a, b provider.Machine) int { return strings.Compare(a.Hostname, b.Hostname) })
	return inv, nil
}

// ownedServers lists the servers of the credential's project carrying the
// cluster's ownership markers (either managed-by marker). Nova lists only
// the project's servers unless asked for all_tenants; each is checked all
// the same (I-F6).
func (c *Cloud) ownedServers(ctx context.Context, cluster string) ([]servers.Server, error) {
	pages, err := servers.List(c.compute, servers.ListOpts{Tags: ClusterTag(cluster), TagsAny: managedAny}).AllPages(ctx)
	if err != nil {
		return nil, wrap(err, "list the nova servers of cluster %s", cluster)
	}
	list, err := servers.ExtractServers(pages)
	if err != nil {
		return nil, wrap(err, "list the nova servers of cluster %s", cluster)
	}
	return slices.DeleteFunc(list, func(s servers.Server) bool { return !c.owner(cluster).tagged(serverAttrs(&s)) }), nil
}

// serverAttrs are what a server's ownership is decided from.
func serverAttrs(s *servers.Server) attrs {
	a := attrs{id: s.ID, project: s.TenantID}
	if s.Tags != nil {
		a.tags = *s.Tags
	}
	return a
}

// serverTags are the tags of a machine's Nova server: its node tags and
// the project's tag.
func (c *Cloud) serverTags(m config.Machine, cluster string) []string {
	return append(NodeTags(m, cluster), ProjectTag(c.projectID))
}

// bootDiskSizes maps server id → size in GB of its boot volume.
func (c *Cloud) bootDiskSizes(ctx context.Context) (map[string]int, error) {
	pages, err := volumes.List(c.volume, volumes.ListOpts{}).AllPages(ctx)
	if err != nil {
		return nil, wrap(err, "list cinder volumes")
	}
	vols, err := volumes.ExtractVolumes(pages)
	if err != nil {
		return nil, wrap(err, "list cinder volumes")
	}
	sizes := map[string]int{}
	for server, v := range bootVolumes(vols) {
		sizes[server] = v.Size
	}
	return sizes, nil
}

// bootVolumes maps server id → its boot volume among vols: the volume
// attached as the first disk, else a bootable one.
func bootVolumes(vols []volumes.Volume) map[string]volumes.Volume {
	boot := map[string]volumes.Volume{}
	for _, v := range vols {
		for _, a := range v.Attachments {
			if _, found := boot[a.ServerID]; isFirstDisk(a.Device) || (v.Bootable == "true" && !found) {
				boot[a.ServerID] = v
			}
		}
	}
	return boot
}

// isFirstDisk reports a root device name such as /dev/vda or /dev/sda.
func isFirstDisk(device string) bool {
	return strings.HasPrefix(device, "/dev/") && strings.HasSuffix(device, "da")
}

// machineOf is a server as the phases see it; DiskGB is the caller's.
func machineOf(s *servers.Server, cluster string) provider.Machine {
	m := provider.Machine{
		Hostname: s.Name, ID: s.ID, Status: s.Status, Zone: s.AvailabilityZone, Flavor: flavorName(s.Flavor),
		Kind: KindServer, Stopped: strings.EqualFold(s.Status, "SHUTOFF"),
	}
	if s.Tags != nil {
		for _, t := range *s.Tags {
			if v, ok := strings.CutPrefix(t, RoleTag("")); ok {
				m.Role = v
			}
			if v, ok := strings.CutPrefix(t, PoolTag("")); ok {
				m.Pool = v
			}
		}
	}
	m.Address = fixedAddress(s.Addresses, cluster+"-net")
	return m
}

// flavorName is the server's flavor: its name at microversion 2.47+ (the
// flavor is embedded), else its id.
func flavorName(f map[string]any) string {
	if name, ok := f["original_name"].(string); ok {
		return name
	}
	id, _ := f["id"].(string)
	return id
}

// fixedAddress is the first fixed address Nova reports, looking at the
// network named preferred first and then the others by name.
func fixedAddress(addrs map[string]any, preferred string) netip.Addr {
	names := make([]string, 0, len(addrs))
	for n := range addrs {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if (a == preferred) != (b == preferred) {
			if a == preferred {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, n := range names {
		list, _ := addrs[n].([]any)
		for _, item := range list {
			e, _ := item.(map[string]any)
			if kind, _ := e["OS-EXT-IPS:type"].(string); kind != "" && kind != "fixed" {
				continue
			}
			raw, _ := e["addr"].(string)
			if a, err := netip.ParseAddr(raw); err == nil {
				return a
			}
		}
	}
	return netip.Addr{}
}

// waitServers polls the cluster's server list (backing off from
// ctxwait.FirstPoll to every Options.Poll) until done has ended the wait
// of every server in pending (id → hostname) or Options.Wait has passed.
// It returns the servers last listed when their wait ended without error,
// and each failure naming its server.
func (c *Cloud) waitServers(ctx context.Context, cluster string, pending map[string]string, want string, done func(*servers.Server) (bool, error)) (map[string]servers.Server, error) {
	wait, cancel := context.WithTimeout(ctx, c.opts.Wait)
	defer cancel()
	w := serverWait{pending: pending, status: map[string]string{}, finished: map[string]servers.Server{}}
	pause := ctxwait.NewBackoff(c.opts.Poll)
	for len(pending) > 0 {
		list, err := c.ownedServers(wait, cluster)
		if err != nil && wait.Err() == nil {
			return w.finished, errors.Join(append(w.errs, err)...)
		}
		if err == nil {
			w.take(list, done)
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-wait.Done():
			reason := fmt.Sprintf("not %s after %s", want, c.opts.Wait)
			if ctx.Err() != nil {
				reason = fmt.Sprintf("stopped waiting for %s: %v", want, ctx.Err())
			}
			w.giveUp(reason)
			return w.finished, errors.Join(w.errs...)
		case <-time.After(pause.Next()):
		}
	}
	return w.finished, errors.Join(w.errs...)
}

// serverWait is the progress of waitServers: the servers still pending
// (id → hostname), each one's last listed status, the servers whose wait
// ended well, and the failures.
type serverWait struct {
	pending, status map[string]string
	finished        map[string]servers.Server
	errs            []error
}

// take asks done about every pending server of one listing (nil when it
// is not listed) and settles those whose wait ended.
func (w *serverWait) take(list []servers.Server, done func(*servers.Server) (bool, error)) {
	listed := map[string]*servers.Server{}
	for i := range list {
		listed[list[i].ID] = &list[i]
	}
	for _, id := range slices.Sorted(maps.Keys(w.pending)) {
		s := listed[id]
		if s != nil {
			w.status[id] = s.Status
		}
		ended, err := done(s)
		switch {
		case !ended:
			continue
		case err != nil:
			w.errs = append(w.errs, fmt.Errorf("server %s (%s): %w", w.pending[id], id, err))
		case s != nil:
			w.finished[id] = *s
		}
		delete(w.pending, id)
	}
}

// giveUp fails every server still pending, for reason.
func (w *serverWait) giveUp(reason string) {
	for _, id := range slices.Sorted(maps.Keys(w.pending)) {
		w.errs = append(w.errs, fmt.Errorf("server %s (%s): %s (status %s)", w.pending[id], id, reason, cmp.Or(w.status[id], "unknown")))
	}
}
