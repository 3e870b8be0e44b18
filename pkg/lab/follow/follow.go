// Package follow makes the lab follow a real OpenStack instead of
// simulating one: a Follower polls the cloud as admin and boots, stops and
// forwards the lab's Talos nodes and floating IPs through its Host.
package follow

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// Options make the lab follow a real OpenStack (for example
// ../shared/openstack-lab) instead of starting its own: every ACTIVE server
// of every project boots a Talos node from its user_data on its port's fixed
// IP, every associated floating IP is served as NAT, and a node stops when
// its server goes.
//
// Not followed: server states other than ACTIVE (any other state, SHUTOFF
// included, stops the node; a reboot or rebuild of the same server is not
// seen), config drive contents other than user_data, a server's ports after
// the first loopback fixed IP (IPv6 and non-loopback addresses are
// ignored), security groups (NAT forwards the ports nat.Ports lists to
// anyone); changes are seen one Interval late, and the follower's own API
// calls are not in the lab's Recorder.
type Options struct {
	// Auth are ADMIN credentials: listing every project's servers
	// (all_tenants) and reading user_data (microversion 2.3) need them.
	Auth gophercloud.AuthOptions
	// Region is the catalog region ("" takes the first).
	Region string
	// Interval is how often the cloud is polled (default 2s).
	Interval time.Duration
	// CallTimeout bounds every API call (default 10s).
	CallTimeout time.Duration
	// Only, when valid, limits the follower to servers whose address and
	// floating IPs whose fixed address lie in it (a cluster's CIDR), so
	// labs following one cloud for different clusters never serve the
	// same address twice.
	Only netip.Prefix
}

// follows reports whether a is an address the follower serves.
func (o Options) follows(a netip.Addr) bool {
	return a.IsLoopback() && (!o.Only.IsValid() || o.Only.Contains(a))
}

// FromClouds reads the credentials of cloud from a clouds.yaml
// (the real lab writes /opt/oslab/clouds.yaml, admin cloud "oslab"); path ""
// searches the standard locations (./clouds.yaml, ~/.config/openstack,
// /etc/openstack).
func FromClouds(path, cloud string) (*Options, error) {
	opts := []clouds.ParseOption{clouds.WithCloudName(cloud)}
	if path != "" {
		opts = append(opts, clouds.WithLocations(path))
	}
	ao, eo, _, err := clouds.Parse(opts...)
	if err != nil {
		return nil, fmt.Errorf("clouds.yaml %s, cloud %s: %w", path, cloud, err)
	}
	return &Options{Auth: ao, Region: eo.Region}, nil
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 10 * time.Second
	}
	o.Auth.AllowReauth = true
	return o
}

// followed is a server whose Talos node the follower runs.
type followed struct {
	name string
	addr netip.Addr
}

// Host is what a Follower drives: the lab's Talos nodes and its NAT.
type Host interface {
	// BootServer boots a Talos node at addr from a server's user data.
	BootServer(name string, addr netip.Addr, userData []byte) error
	// DestroyNode deletes the Talos node at addr.
	DestroyNode(addr netip.Addr)
	// Forward serves floating IP fip as NAT to fixed.
	Forward(fip, fixed netip.Addr) error
	// Unforward stops serving fip.
	Unforward(fip netip.Addr)
}

// Follower polls a real OpenStack as admin and makes the lab's Talos nodes
// and NAT follow its servers and floating IPs.
type Follower struct {
	host    Host
	logf    func(format string, args ...any)
	opts    Options
	compute *gophercloud.ServiceClient
	network *gophercloud.ServiceClient

	mu    sync.Mutex
	nodes map[string]followed       // by server ID
	fips  map[netip.Addr]netip.Addr // floating → fixed
}

// New authenticates against the cloud (loopback only); logf receives the
// failures of the polls Run makes.
func New(ctx context.Context, host Host, o Options, logf func(format string, args ...any)) (*Follower, error) {
	o = o.withDefaults()
	pc, err := gos.NewClient(o.Auth.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", o.Auth.IdentityEndpoint, err)
	}
	pc.HTTPClient = http.Client{
		Timeout:   o.CallTimeout,
		Transport: &http.Transport{DialContext: labnet.Dialer().DialContext, MaxIdleConnsPerHost: 4},
	}
	actx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	defer cancel()
	if err := gos.Authenticate(actx, pc, o.Auth); err != nil {
		return nil, fmt.Errorf("follow %s: authenticate: %w", o.Auth.IdentityEndpoint, err)
	}
	eo := gophercloud.EndpointOpts{Region: o.Region}
	compute, err := gos.NewComputeV2(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("follow: compute endpoint: %w", err)
	}
	compute.Microversion = "2.3" // OS-EXT-SRV-ATTR:user_data
	network, err := gos.NewNetworkV2(pc, eo)
	if err != nil {
		return nil, fmt.Errorf("follow: network endpoint: %w", err)
	}
	return &Follower{
		host: host, logf: logf, opts: o, compute: compute, network: network,
		nodes: map[string]followed{}, fips: map[netip.Addr]netip.Addr{},
	}, nil
}

// Run syncs every Interval until ctx ends.
func (f *Follower) Run(ctx context.Context) {
	t := time.NewTicker(f.opts.Interval)
	defer t.Stop()
	for {
		if err := f.Sync(ctx); err != nil && ctx.Err() == nil {
			f.logf("follow: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Nodes returns the fixed address of every server whose node runs, by
// server ID.
func (f *Follower) Nodes() map[string]netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]netip.Addr, len(f.nodes))
	for id, n := range f.nodes {
		out[id] = n.addr
	}
	return out
}

// FloatingIPs returns the floating IPs served as NAT, with their targets.
func (f *Follower) FloatingIPs() map[netip.Addr]netip.Addr {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.fips)
}

// followServer is the part of a Nova server the follower reads.
type followServer struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	UserData string `json:"OS-EXT-SRV-ATTR:user_data"`
}

// Sync polls the cloud once and brings nodes and NAT in line with it. A
// failed listing changes nothing.
func (f *Follower) Sync(ctx context.Context) error {
	srvs, err := f.servers(ctx)
	if err != nil {
		return err
	}
	addrs, err := f.portAddresses(ctx)
	if err != nil {
		return err
	}
	fips, err := f.floatingIPs(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := map[string]followServer{}
	for _, s := range srvs {
		if s.Status == "ACTIVE" {
			want[s.ID] = s
		}
	}
	for id, n := range f.nodes {
		if _, ok := want[id]; !ok || addrs[id] != n.addr {
			f.host.DestroyNode(n.addr)
			delete(f.nodes, id)
		}
	}
	var errs []error
	for id, s := range want {
		if _, ok := f.nodes[id]; ok {
			continue
		}
		addr, ok := addrs[id]
		if !ok {
			continue // no loopback fixed IP (yet)
		}
		ud, err := base64.StdEncoding.DecodeString(s.UserData)
		if err != nil {
			errs = append(errs, fmt.Errorf("server %s: user_data: %w", s.Name, err))
			continue
		}
		if err := f.host.BootServer(s.Name, addr, ud); err != nil {
			errs = append(errs, err)
			continue
		}
		f.nodes[id] = followed{name: s.Name, addr: addr}
	}
	for fip, fixed := range f.fips {
		if fips[fip] != fixed {
			f.host.Unforward(fip)
			delete(f.fips, fip)
		}
	}
	for fip, fixed := range fips {
		if _, ok := f.fips[fip]; ok {
			continue
		}
		if err := f.host.Forward(fip, fixed); err != nil {
			errs = append(errs, err)
			continue
		}
		f.fips[fip] = fixed
	}
	return errors.Join(errs...)
}

func (f *Follower) servers(ctx context.Context) ([]followServer, error) {
	cctx, cancel := context.WithTimeout(ctx, f.opts.CallTimeout)
	defer cancel()
	page, err := servers.List(f.compute, servers.ListOpts{AllTenants: true}).AllPages(cctx)
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	var out []followServer
	if err := servers.ExtractServersInto(page, &out); err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	return out, nil
}

// portAddresses maps each device (server) to the first loopback fixed IP of
// its ports, in port creation order.
func (f *Follower) portAddresses(ctx context.Context) (map[string]netip.Addr, error) {
	cctx, cancel := context.WithTimeout(ctx, f.opts.CallTimeout)
	defer cancel()
	page, err := ports.List(f.network, ports.ListOpts{}).AllPages(cctx)
	if err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	ps, err := ports.ExtractPorts(page)
	if err != nil {
		return nil, fmt.Errorf("list ports: %w", err)
	}
	slices.SortStableFunc(ps, func(a, b ports.Port) int { return a.CreatedAt.Compare(b.CreatedAt) })
	out := map[string]netip.Addr{}
	for _, p := range ps {
		if p.DeviceID == "" {
			continue
		}
		if _, ok := out[p.DeviceID]; ok {
			continue
		}
		for _, ip := range p.FixedIPs {
			if a, err := netip.ParseAddr(ip.IPAddress); err == nil && f.opts.follows(a) {
				out[p.DeviceID] = a
				break
			}
		}
	}
	return out, nil
}

// floatingIPs maps every associated floating IP to its fixed IP.
func (f *Follower) floatingIPs(ctx context.Context) (map[netip.Addr]netip.Addr, error) {
	cctx, cancel := context.WithTimeout(ctx, f.opts.CallTimeout)
	defer cancel()
	page, err := floatingips.List(f.network, floatingips.ListOpts{}).AllPages(cctx)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", err)
	}
	fs, err := floatingips.ExtractFloatingIPs(page)
	if err != nil {
		return nil, fmt.Errorf("list floating IPs: %w", err)
	}
	out := map[netip.Addr]netip.Addr{}
	for _, fip := range fs {
		a, err1 := netip.ParseAddr(fip.FloatingIP)
		b, err2 := netip.ParseAddr(fip.FixedIP)
		if fip.PortID != "" && err1 == nil && err2 == nil && a.IsLoopback() && f.opts.follows(b) {
			out[a] = b
		}
	}
	return out, nil
}
