package openstack

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// meta is what every stored resource carries.
type meta struct {
	Created  time.Time
	Updated  time.Time
	Revision int
	seq      int64
}

// Project is a Keystone project.
type Project struct {
	ID, Name string
}

// Flavor is a Nova flavor.
type Flavor struct {
	ID    string
	Name  string
	VCPUs int
	RAM   int // MiB
	Disk  int // GiB
}

// DefaultFlavors are the real lab's flavors.
func DefaultFlavors() []Flavor {
	return []Flavor{
		{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1},
		{ID: "2", Name: "m1.small", VCPUs: 2, RAM: 2048, Disk: 10},
		{ID: "3", Name: "talos.cp", VCPUs: 4, RAM: 8192, Disk: 20},
		{ID: "4", Name: "talos.worker", VCPUs: 4, RAM: 8192, Disk: 20},
	}
}

// EventKind says what happened.
type EventKind string

// Event kinds.
const (
	ServerActive         EventKind = "server-active"
	ServerError          EventKind = "server-error"
	ServerDeleted        EventKind = "server-deleted"
	FloatingIPAssociated EventKind = "floatingip-associated"
	FloatingIPReleased   EventKind = "floatingip-disassociated"
)

// Event is what the talos-node simulation needs to boot and stop nodes and
// to serve floating IPs as NAT would.
type Event struct {
	Kind EventKind
	// Server is a copy of the server (server events).
	Server *Server
	// UserData is the decoded user_data (server events).
	UserData []byte
	// Ports are the server's ports, with their fixed IPs (server events).
	Ports []Port
	// FloatingIP is a copy of the floating IP (floating IP events); for
	// FloatingIPReleased, FixedIPAddress is the address it pointed at.
	FloatingIP *FloatingIP
}

// state is the whole cloud, behind one lock.
type state struct {
	mu     sync.Mutex
	ctx    context.Context // ends at close (web-download fetches)
	cancel context.CancelFunc
	cfg    *Config
	base   string
	seq    int64
	closed bool
	timers map[*time.Timer]struct{}
	// pending collects events to deliver after the lock is released.
	pending []Event

	projects map[string]*Project // by id
	users    map[string]*user
	appCreds map[string]*appCred
	tokens   map[string]*token
	quotas   map[string]Quota

	flavors  []Flavor
	servers  map[string]*Server
	networks map[string]*Network
	subnets  map[string]*Subnet
	ports    map[string]*Port
	routers  map[string]*Router
	fips     map[string]*FloatingIP
	sgs      map[string]*SecurityGroup
	rules    map[string]*SecurityGroupRule
	images   map[string]*Image
	volumes  map[string]*Volume

	externalNet string
}

func newState(ctx context.Context, cfg *Config, base string) (*state, error) {
	c := &state{
		cfg: cfg, base: base, timers: map[*time.Timer]struct{}{},
		projects: map[string]*Project{}, users: map[string]*user{}, appCreds: map[string]*appCred{},
		tokens: map[string]*token{}, quotas: map[string]Quota{}, flavors: slices.Clone(cfg.Flavors),
		servers: map[string]*Server{}, networks: map[string]*Network{}, subnets: map[string]*Subnet{},
		ports: map[string]*Port{}, routers: map[string]*Router{}, fips: map[string]*FloatingIP{},
		sgs: map[string]*SecurityGroup{}, rules: map[string]*SecurityGroupRule{},
		images: map[string]*Image{}, volumes: map[string]*Volume{},
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	for _, name := range []string{"admin", "service", "demo"} {
		c.ensureProject(name)
	}
	for _, u := range cfg.Users {
		p := c.ensureProject(u.Project)
		id := newHexID()
		c.users[id] = &user{id: id, name: u.Name, password: u.Password, project: p.ID, roles: slices.Clone(u.Roles)}
	}
	prefix, err := netip.ParsePrefix(cfg.ExternalCIDR)
	if err != nil || labnet.CheckLoopback(prefix.Addr().String()) != nil {
		return nil, fmt.Errorf("external CIDR %q must be a loopback CIDR", cfg.ExternalCIDR)
	}
	admin := c.projectByName("admin")
	c.mu.Lock()
	defer c.mu.Unlock()
	pub := c.addNetwork(admin.ID, "public", 1500, true)
	c.externalNet = pub.ID
	start, end := poolBounds(prefix.Masked())
	if prefix.Bits() <= 24 {
		start, end = addrAdd(prefix.Masked().Addr(), 10), addrAdd(prefix.Masked().Addr(), 250)
	}
	c.addSubnet(&Subnet{
		ProjectID: admin.ID, Name: "public-subnet", NetworkID: pub.ID, CIDR: prefix.Masked().String(),
		GatewayIP: addrAdd(prefix.Masked().Addr(), 1).String(), Pools: []Pool{{start.String(), end.String()}},
	})
	return c, nil
}

func (c *state) ensureProject(name string) *Project {
	if p := c.projectByName(name); p != nil {
		return p
	}
	p := &Project{ID: newHexID(), Name: name}
	c.projects[p.ID] = p
	return p
}

func (c *state) projectByName(name string) *Project {
	for _, p := range c.projects {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// newMeta stamps a new resource; callers hold the lock.
func (c *state) newMeta() meta {
	c.seq++
	now := time.Now().UTC().Truncate(time.Second)
	return meta{Created: now, Updated: now, Revision: 0, seq: c.seq}
}

func (m *meta) touch() {
	m.Updated = time.Now().UTC().Truncate(time.Second)
	m.Revision++
}

// after runs f with the lock held once d has passed, then delivers the
// events f queued. Nothing runs after close.
func (c *state) after(d time.Duration, f func()) {
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		c.mu.Lock()
		delete(c.timers, t)
		if c.closed {
			c.mu.Unlock()
			return
		}
		f()
		c.unlock()
	})
	c.timers[t] = struct{}{}
}

// unlock releases the lock and delivers queued events.
func (c *state) unlock() {
	events := c.pending
	c.pending = nil
	c.mu.Unlock()
	if c.cfg.OnEvent == nil {
		return
	}
	for _, e := range events {
		c.cfg.OnEvent(e)
	}
}

func (c *state) emit(e Event) { c.pending = append(c.pending, e) }

func (c *state) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.cancel()
	for t := range c.timers {
		t.Stop()
	}
	clear(c.timers)
}

// quota returns the quota of project.
func (c *state) quota(project string) Quota {
	if q, ok := c.quotas[project]; ok {
		return q
	}
	return c.cfg.Quota
}

// SetQuota sets the quota of the project named name (0 = unlimited).
func (s *Cloud) SetQuota(name string, q Quota) error {
	c := s.st
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.projectByName(name)
	if p == nil {
		return fmt.Errorf("no project %q", name)
	}
	c.quotas[p.ID] = q
	return nil
}

// over reports whether adding n to used exceeds limit (limit ≤ 0: unlimited).
func over(limit, used, n int) bool { return limit > 0 && used+n > limit }

// sortedValues returns the map's values in creation order.
func sortedValues[T any](m map[string]*T, seq func(*T) int64) []*T {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b *T) int { return int(seq(a) - seq(b)) })
	return out
}
