package openstack

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// KindServer is the plan kind of a machine's Nova server.
const KindServer = "openstack:server"

const (
	// maxUserData is Nova's limit on user_data, counted after base64.
	maxUserData = 65535
)

// managedAny is the tags-any filter matching either managed-by marker.
const managedAny = TagManagedBy + "," + TagLegacyManagedBy

// listFlavors returns the flavors the project may use.
func (c *Cloud) listFlavors(ctx context.Context) ([]flavors.Flavor, error) {
	pages, err := flavors.ListDetail(c.compute, nil).AllPages(ctx)
	if err != nil {
		return nil, wrap(err, "list nova flavors")
	}
	list, err := flavors.ExtractFlavors(pages)
	return list, wrap(err, "list nova flavors")
}

// resolveFlavor finds ref (an id, else a unique name) for key.
func resolveFlavor(list []flavors.Flavor, ref, key string) (flavors.Flavor, error) {
	var named []flavors.Flavor
	for _, f := range list {
		if f.ID == ref {
			return f, nil
		}
		if f.Name == ref {
			named = append(named, f)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		names := make([]string, len(list))
		for i, f := range list {
			names[i] = f.Name
		}
		return flavors.Flavor{}, fmt.Errorf("%s: flavor %q is neither the name nor the id of a flavor of this project (flavors: %s)", key, ref, strings.Join(names, ", "))
	}
	ids := make([]string, len(named))
	for i, f := range named {
		ids[i] = f.ID
	}
	return flavors.Flavor{}, fmt.Errorf("%s: %d flavors are named %q (ids %s); set %s to one of the ids", key, len(named), ref, strings.Join(ids, ", "), key)
}

// ValidateMachines refuses flavor, boot disk and availability-zone changes
// to existing servers, and a network.cluster.cidr the existing subnet does
// not have, every one at once. The flavor list is read only when a
// server's flavor differs from the pool's as written.
func (c *Cloud) ValidateMachines(ctx context.Context, desired []config.Machine, inv *provider.Inventory) error {
	cluster := c.cluster
	if err := c.validateSubnet(ctx, cluster); err != nil {
		return err
	}
	r := provider.Refusals{What: "server(s)"}
	var flavorList []flavors.Flavor
	var small []error
	smallSeen := map[string]bool{}
	for _, d := range desired {
		m, exists := inv.Find(d.Hostname)
		pool, key, ok := cluster.PoolOf(d.Pool)
		switch {
		case !ok:
		case !exists:
			if pool.Disk < imageMinDiskGB && !smallSeen[key] {
				smallSeen[key] = true
				small = append(small, fmt.Errorf("%s.disk %d is below the boot image's minimum disk of %d GB (its min_disk): raise %s.disk to at least %d", key, pool.Disk, imageMinDiskGB, key, imageMinDiskGB))
			}
		default:
			if err := c.refuseServerChanges(ctx, &r, &flavorList, cluster.OpenStack.AvailabilityZone, m, pool, key); err != nil {
				return err
			}
		}
	}
	return errors.Join(append(small, r.Err())...)
}

// refuseServerChanges adds to r the create-only fields (flavor, boot
// disk, availability zone az) in which the existing server m differs from
// its pool. The flavor list is read into flavorList the first time a
// flavor differs as written.
func (c *Cloud) refuseServerChanges(ctx context.Context, r *provider.Refusals, flavorList *[]flavors.Flavor, az string, m provider.Machine, pool config.Pool, key string) error {
	if m.Flavor != "" && m.Flavor != pool.Flavor {
		if *flavorList == nil {
			list, err := c.listFlavors(ctx)
			if err != nil {
				return err
			}
			*flavorList = list
		}
		if f, err := resolveFlavor(*flavorList, pool.Flavor, key+".flavor"); err != nil || (f.Name != m.Flavor && f.ID != m.Flavor) {
			r.Add(key+".flavor", m.Flavor, pool.Flavor, m.Hostname, "flavors are create-only on OpenStack")
		}
	}
	if m.DiskGB > 0 && m.DiskGB != pool.Disk {
		r.Add(key+".disk", fmt.Sprint(m.DiskGB), fmt.Sprint(pool.Disk), m.Hostname, "boot volumes are create-only on OpenStack")
	}
	if az != "" && m.Zone != "" && m.Zone != az {
		r.Add("openstack.availability_zone", m.Zone, az, m.Hostname, "availability zones are create-only on OpenStack")
	}
	return nil
}

// serverJob is one server to create, checked.
type serverJob struct {
	spec     provider.MachineSpec
	flavor   flavors.Flavor
	disk     int
	userData string
}

// CreateMachines creates the servers (at most provider.MaxConcurrent requests at a
// time), then waits for all of them to be ACTIVE within Options.Wait. It
// returns the machines that booted and every failure, joined.
func (c *Cloud) CreateMachines(ctx context.Context, specs []provider.MachineSpec, plan *provider.Plan) ([]provider.Machine, error) {
	cluster := c.cluster
	if len(specs) == 0 {
		return nil, nil
	}
	jobs, err := c.serverJobs(ctx, cluster, specs)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(jobs))
	errs := provider.FanOut(ctx, len(jobs), func(ctx context.Context, i int) error {
		j := jobs[i]
		change := state.Change{
			Action: "create", Kind: KindServer, Name: j.spec.Machine.Hostname,
			Detail: fmt.Sprintf("flavor %s, disk %d GB", j.flavor.Name, j.disk),
		}
		return plan.Do(ctx, change, func(ctx context.Context) error {
			var err error
			ids[i], err = c.createServer(ctx, cluster, j, plan)
			return err
		})
	})
	// A dry run created nothing: it returns every machine as planned.
	out := make([]provider.Machine, len(jobs))
	for i, j := range jobs {
		out[i] = plannedMachine(cluster, j)
	}
	werr := plan.Verify(ctx, func(ctx context.Context) error {
		var err error
		out, err = c.bootedMachines(ctx, jobs, ids)
		return err
	})
	return out, errors.Join(append(errs, werr)...)
}

// bootedMachines waits for the servers created (ids, one per job; empty
// for a job that failed) to be ACTIVE and returns the machines that
// booted, with the failures joined.
func (c *Cloud) bootedMachines(ctx context.Context, jobs []serverJob, ids []string) ([]provider.Machine, error) {
	created := map[string]string{}
	for i, id := range ids {
		if id != "" {
			created[id] = jobs[i].spec.Machine.Hostname
		}
	}
	booted, err := c.waitServers(ctx, c.cluster.Name, created, "ACTIVE", serverBooted)
	var out []provider.Machine
	for i, j := range jobs {
		s, ok := booted[ids[i]]
		if !ok {
			continue
		}
		m := machineOf(&s, c.cluster.Name)
		m.DiskGB = j.disk
		if !m.Address.IsValid() {
			m.Address = j.spec.Attachment.Address
		}
		out = append(out, m)
	}
	return out, err
}

// serverJobs resolves flavors and encodes machine configs, refusing every
// spec that cannot be created.
func (c *Cloud) serverJobs(ctx context.Context, cluster *config.Cluster, specs []provider.MachineSpec) ([]serverJob, error) {
	flavorList, err := c.listFlavors(ctx)
	if err != nil {
		return nil, err
	}
	jobs := make([]serverJob, len(specs))
	var errs []error
	for i, s := range specs {
		host := s.Machine.Hostname
		pool, key, ok := cluster.PoolOf(s.Machine.Pool)
		if !ok {
			errs = append(errs, fmt.Errorf("server %s: pool %q is not in cluster.yaml", host, s.Machine.Pool))
			continue
		}
		f, err := resolveFlavor(flavorList, pool.Flavor, key+".flavor")
		if err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", host, err))
			continue
		}
		ud := base64.StdEncoding.EncodeToString(s.Config)
		if len(ud) > maxUserData {
			errs = append(errs, fmt.Errorf("server %s: machine config is %d bytes, %d in base64, over Nova's user_data limit of %d: shrink %s.config_patches or talos.config_patches",
				host, len(s.Config), len(ud), maxUserData, key))
			continue
		}
		jobs[i] = serverJob{spec: s, flavor: f, disk: pool.Disk, userData: ud}
	}
	return jobs, errors.Join(errs...)
}

// createServer posts one server: boot from a new volume of the image,
// the machine's port as its only NIC, config drive and user data. A lost
// answer is settled (see settle): of several owned servers of its name,
// the one the machine's port is bound to is kept (portHolder).
func (c *Cloud) createServer(ctx context.Context, cluster *config.Cluster, j serverJob, plan *provider.Plan) (string, error) {
	switch {
	case j.spec.Attachment.Attachment == "":
		return "", errors.New("no network port: the network phase did not attach this machine")
	case j.spec.Image.ID == "":
		return "", errors.New("no boot image id: the image phase did not provide one")
	}
	configDrive := true
	opts := servers.CreateOpts{
		Name:             j.spec.Machine.Hostname,
		FlavorRef:        j.flavor.ID,
		AvailabilityZone: cluster.OpenStack.AvailabilityZone,
		ConfigDrive:      &configDrive,
		// Already base64: gophercloud passes it through unchanged.
		UserData: []byte(j.userData),
		Networks: []servers.Network{{Port: j.spec.Attachment.Attachment}},
		BlockDevice: []servers.BlockDevice{{
			SourceType: servers.SourceImage, UUID: j.spec.Image.ID, DestinationType: servers.DestinationVolume,
			VolumeSize: j.disk, BootIndex: 0, DeleteOnTermination: true,
		}},
		Tags: c.serverTags(j.spec.Machine, cluster.Name),
	}
	host := j.spec.Machine.Hostname
	s, err := settle(ctx, c, lateCreate[servers.Server]{
		what: "server " + host,
		create: func(ctx context.Context) (servers.Server, error) {
			s, err := servers.Create(ctx, c.compute, opts, nil).Extract()
			if err != nil {
				return servers.Server{}, wrap(err, "nova")
			}
			return *s, nil
		},
		// The tags went in the POST: an owned server of that name is one
		// this create made.
		find: func(ctx context.Context) ([]servers.Server, error) {
			list, err := c.ownedServers(ctx, cluster.Name)
			return slices.DeleteFunc(list, func(s servers.Server) bool { return s.Name != host }), err
		},
		id: func(s servers.Server) string { return s.ID },
		uses: func(ctx context.Context, found []servers.Server) ([]bool, error) {
			return c.portHolder(ctx, j.spec.Attachment.Attachment, found)
		},
		drop: func(ctx context.Context, s servers.Server) error { return c.dropServer(ctx, cluster.Name, plan, s) },
	})
	return s.ID, err
}

// plannedMachine is what a dry run reports for a server it would create.
func plannedMachine(cluster *config.Cluster, j serverJob) provider.Machine {
	m := j.spec.Machine
	return provider.Machine{
		Hostname: m.Hostname, Role: m.Role, Pool: m.Pool, Address: j.spec.Attachment.Address,
		Flavor: j.flavor.Name, DiskGB: j.disk, Zone: cluster.OpenStack.AvailabilityZone, Kind: KindServer,
	}
}

// serverBooted ends the wait for a new server: ACTIVE, or ERROR with
// Nova's fault.
func serverBooted(s *servers.Server) (bool, error) {
	switch {
	case s == nil:
		return true, errors.New("vanished while booting")
	case s.Status == "ACTIVE":
		return true, nil
	case s.Status == "ERROR":
		return true, fmt.Errorf("went to ERROR: %s", s.Fault.Message)
	}
	return false, nil
}

// ReconcileMachines only deletes the unused second servers of a name the
// inventory found (dropTwins): servers are create-only on OpenStack.
func (c *Cloud) ReconcileMachines(ctx context.Context, _ *provider.Inventory, plan *provider.Plan) error {
	return c.dropTwins(ctx, c.cluster.Name, plan)
}

// PendingRestart is always empty on OpenStack: servers are never resized
// in place.
func (c *Cloud) PendingRestart(context.Context, *provider.Inventory) ([]string, error) {
	return nil, nil
}

// RestartMachine is not supported on OpenStack: nothing there waits for a
// restart.
func (c *Cloud) RestartMachine(_ context.Context, m provider.Machine, _ *provider.Plan) error {
	return fmt.Errorf("restart server %s: not supported on OpenStack (sizing changes are refused there, so no server needs one)", m.Hostname)
}

// FinalizeMachines has nothing to do on OpenStack: the config drive stays
// with its server.
func (c *Cloud) FinalizeMachines(context.Context, *provider.Inventory, *provider.Plan) error {
	return nil
}
