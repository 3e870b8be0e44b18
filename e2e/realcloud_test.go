package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/applicationcredentials"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/follow"
	"github.com/talosc/talosc/pkg/lab/labnet"
	osprovider "github.com/talosc/talosc/pkg/provider/openstack"
)

// realOpenStackEnv names the clouds.yaml of a real OpenStack (the one
// ../shared/openstack-lab/up.sh starts writes /opt/oslab/clouds.yaml, with
// clouds "oslab", admin, and "oslab-demo", member of project demo). The
// scripts that use "lab follow" start with
//
//	[!realopenstack] skip 'no real OpenStack: set TALOSC_REAL_OPENSTACK'
const realOpenStackEnv = "TALOSC_REAL_OPENSTACK"

// condition answers the scripts' own conditions: "realopenstack" holds when
// $TALOSC_REAL_OPENSTACK is set.
func condition(cond string) (bool, error) {
	if cond == "realopenstack" {
		return os.Getenv(realOpenStackEnv) != "", nil
	}
	return false, fmt.Errorf("unknown condition %q", cond)
}

// realCallTimeout bounds every call the scripts make to the real cloud.
const realCallTimeout = 30 * time.Second

// realCloud is the real OpenStack a "lab follow" script builds its cluster
// in, seen as the member user who owns the cluster.
type realCloud struct {
	compute, network, image, identity *gophercloud.ServiceClient
	authURL, region                   string
	userID                            string
	tags                              string // the cluster's ownership tags, for the tags filter
}

// follow starts a lab following the real OpenStack of $TALOSC_REAL_OPENSTACK
// and writes the cluster directory for an application credential of its
// member user (with "late RULE...", for the front of a lateProxy applying
// the creates RULEs pick after talosc gave up on them); the credential and whatever the cluster owns go at the end
// of the script, whether or not it reached its destroy.
func (s *scriptLab) follow(ts *testscript.TestScript, args []string) {
	var rules []lateRule
	if i := slices.Index(args, "late"); i >= 0 {
		for _, r := range args[i+1:] {
			rules = append(rules, parseLateRule(r))
		}
		args = args[:i]
	}
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: lab follow DIR [NAME] [late RULE...]")
	}
	path := os.Getenv(realOpenStackEnv)
	if path == "" {
		ts.Fatalf("lab follow: %s is unset (start the script with [!realopenstack] skip)", realOpenStackEnv)
	}
	if s.lab != nil {
		ts.Fatalf("lab follow: this script's lab is already up")
	}
	// Scripts (and test processes) share the cloud: the default name is
	// this script's own.
	s.cluster = fmt.Sprintf("e2e-%d-%d", os.Getpid(), s.index)
	if len(args) == 2 {
		s.cluster = args[1]
	}
	// The lab follows as admin (every project's servers, their
	// user_data); the cluster belongs to the member user, whose
	// credentials the same clouds.yaml reader returns.
	admin, err := follow.FromClouds(path, "oslab")
	ts.Check(err)
	member, err := follow.FromClouds(path, "oslab-demo")
	ts.Check(err)
	admin.Interval = 300 * time.Millisecond
	clusterCIDR, _ := s.networks()
	// Only this cluster's servers: other labs may follow the same cloud.
	admin.Only = netip.MustParsePrefix(clusterCIDR)
	s.start(ts, lab.Options{Follow: admin})

	ctx := context.Background()
	rc, err := newRealCloud(ctx, member.Auth, member.Region, s.cluster)
	ts.Check(err)
	s.real = rc
	cred, err := applicationcredentials.Create(ctx, rc.identity, rc.userID, applicationcredentials.CreateOpts{
		Name: "talosc-" + s.cluster, Description: "talosc e2e script (deleted when it ends)",
	}).Extract()
	ts.Check(err)
	ts.Defer(func() {
		var late map[string][]string
		if s.late != nil { // closed by now: every late create was sent
			late = s.late.madeLate()
		}
		rc.cleanup(ts, cred.ID, late)
	})

	authURL := rc.authURL
	if len(rules) > 0 {
		p, front, err := newLateProxy(rc.authURL, rules, ts.Logf)
		ts.Check(err)
		ts.Defer(p.Close)
		s.late, authURL = p, front
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	_, err = lab.WriteOpenStackCluster(dir, lab.OpenStackCluster{
		Name: s.cluster, AuthURL: authURL, Region: rc.region, CIDR: clusterCIDR,
		CredentialID: cred.ID, CredentialSecret: cred.Secret,
		Comment: `Written by the e2e "lab follow" for a real OpenStack.`, Factory: s.lab.Factory,
	})
	ts.Check(err)
	ts.Setenv("CLUSTER", s.cluster)
	// The cloud's own CLI (python) reads the same clouds.yaml, straight
	// to the services, and must not go to the scripts' refused proxy.
	ts.Setenv("OS_CLIENT_CONFIG_FILE", path)
	ts.Setenv("NO_PROXY", "127.0.0.1,localhost")
	// Servers are ACTIVE in 1-2 s and followed 300 ms later.
	s.pointPhases(ts, "0.1")
}

// newRealCloud authenticates as auth, on loopback only.
func newRealCloud(ctx context.Context, auth gophercloud.AuthOptions, region, cluster string) (*realCloud, error) {
	pc, err := gos.NewClient(auth.IdentityEndpoint)
	if err != nil {
		return nil, err
	}
	pc.HTTPClient = http.Client{
		Timeout:   realCallTimeout,
		Transport: &http.Transport{DialContext: labnet.Dialer().DialContext},
	}
	auth.AllowReauth = true
	if err := gos.Authenticate(ctx, pc, auth); err != nil {
		return nil, fmt.Errorf("authenticate at %s: %w", auth.IdentityEndpoint, err)
	}
	res, ok := pc.GetAuthResult().(tokens.CreateResult)
	if !ok {
		return nil, fmt.Errorf("authenticate at %s: not a v3 token", auth.IdentityEndpoint)
	}
	user, err := res.ExtractUser()
	if err != nil {
		return nil, fmt.Errorf("the token's user: %w", err)
	}
	rc := &realCloud{authURL: auth.IdentityEndpoint, region: region, userID: user.ID, tags: strings.Join(osprovider.ClusterTags(cluster), ",")}
	eo := gophercloud.EndpointOpts{Region: region}
	if rc.identity, err = gos.NewIdentityV3(pc, eo); err != nil {
		return nil, err
	}
	if rc.compute, err = gos.NewComputeV2(pc, eo); err != nil {
		return nil, err
	}
	// Below 2.26 Nova ignores the tags filter and lists every server of
	// the project: another test's, which the cleanup would then delete.
	rc.compute.Microversion = "2.52"
	if rc.network, err = gos.NewNetworkV2(pc, eo); err != nil {
		return nil, err
	}
	if rc.image, err = gos.NewImageV2(pc, eo); err != nil {
		return nil, err
	}
	return rc, nil
}

// ownedKind is one kind of resource "lab real-owned" counts: how to list
// the cluster's resources of that kind (through the tags filter) and how to
// delete one.
type ownedKind struct {
	kind   string
	ids    func(context.Context) ([]string, error)
	delete func(context.Context, string) error
}

// ownedKinds are in the order a cleanup deletes them.
func (rc *realCloud) ownedKinds() []ownedKind {
	return []ownedKind{
		{"servers", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, servers.List(rc.compute, servers.ListOpts{Tags: rc.tags}), servers.ExtractServers, func(x servers.Server) string { return x.ID })
		}, func(ctx context.Context, id string) error { return servers.Delete(ctx, rc.compute, id).ExtractErr() }},
		{"floatingips", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, floatingips.List(rc.network, floatingips.ListOpts{Tags: rc.tags}), floatingips.ExtractFloatingIPs, func(x floatingips.FloatingIP) string { return x.ID })
		}, func(ctx context.Context, id string) error {
			return floatingips.Delete(ctx, rc.network, id).ExtractErr()
		}},
		{"routers", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, routers.List(rc.network, routers.ListOpts{Tags: rc.tags}), routers.ExtractRouters, func(x routers.Router) string { return x.ID })
		}, rc.deleteRouter},
		{"ports", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, ports.List(rc.network, ports.ListOpts{Tags: rc.tags}), ports.ExtractPorts, func(x ports.Port) string { return x.ID })
		}, func(ctx context.Context, id string) error { return ports.Delete(ctx, rc.network, id).ExtractErr() }},
		{"security_groups", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, groups.List(rc.network, groups.ListOpts{Tags: rc.tags}), groups.ExtractGroups, func(x groups.SecGroup) string { return x.ID })
		}, func(ctx context.Context, id string) error { return groups.Delete(ctx, rc.network, id).ExtractErr() }},
		{"subnets", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, subnets.List(rc.network, subnets.ListOpts{Tags: rc.tags}), subnets.ExtractSubnets, func(x subnets.Subnet) string { return x.ID })
		}, func(ctx context.Context, id string) error { return subnets.Delete(ctx, rc.network, id).ExtractErr() }},
		{"networks", func(ctx context.Context) ([]string, error) {
			return listIDs(ctx, networks.List(rc.network, networks.ListOpts{Tags: rc.tags}), networks.ExtractNetworks, func(x networks.Network) string { return x.ID })
		}, func(ctx context.Context, id string) error { return networks.Delete(ctx, rc.network, id).ExtractErr() }},
	}
}

// deleteRouter detaches the router from its subnets, then deletes it.
func (rc *realCloud) deleteRouter(ctx context.Context, id string) error {
	ifaces, err := listIDs(ctx, ports.List(rc.network, ports.ListOpts{DeviceID: id, DeviceOwner: "network:router_interface"}),
		ports.ExtractPorts, func(x ports.Port) string { return x.ID })
	if err != nil {
		return err
	}
	for _, port := range ifaces {
		if _, err := routers.RemoveInterface(ctx, rc.network, id, routers.RemoveInterfaceOpts{PortID: port}).Extract(); err != nil {
			return err
		}
	}
	return routers.Delete(ctx, rc.network, id).ExtractErr()
}

// listIDs lists every page of pager and returns the ids of what it holds.
func listIDs[T any](ctx context.Context, pager pagination.Pager, extract func(pagination.Page) ([]T, error), id func(T) string) ([]string, error) {
	cctx, cancel := context.WithTimeout(ctx, realCallTimeout)
	defer cancel()
	page, err := pager.AllPages(cctx)
	if err != nil {
		return nil, err
	}
	xs, err := extract(page)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(xs))
	for i, x := range xs {
		ids[i] = id(x)
	}
	return ids, nil
}

// owned counts the cluster's resources by kind.
func (rc *realCloud) owned(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	for _, k := range rc.ownedKinds() {
		ids, err := k.ids(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", k.kind, err)
		}
		if len(ids) > 0 {
			out[k.kind] = len(ids)
		}
	}
	return out, nil
}

// images counts the active images talosc manages that the member user sees
// (the image is shared by every cluster of the project, not the cluster's
// own).
func (rc *realCloud) images(ctx context.Context) (int, error) {
	ids, err := listIDs(ctx, images.List(rc.image, images.ListOpts{Tags: []string{osprovider.TagManagedBy}, Status: images.ImageStatusActive}),
		images.ExtractImages, func(x images.Image) string { return x.ID })
	return len(ids), err
}

// cleanup deletes the application credential and, best effort, anything
// the cluster still owns (a script that failed before its destroy must not
// leave resources in a shared cloud), and what the late creates made
// (late: ids by the path of their create), which may carry no tag; what
// it cannot delete, it logs.
func (rc *realCloud) cleanup(ts *testscript.TestScript, credID string, late map[string][]string) {
	ctx := context.Background()
	errs := []error{applicationcredentials.Delete(ctx, rc.identity, rc.userID, credID).ExtractErr()}
	left, err := rc.owned(ctx)
	errs = append(errs, err)
	if len(left) > 0 {
		ts.Logf("real cloud cleanup: the cluster still owns %v; deleting it", left)
		for _, k := range rc.ownedKinds() {
			errs = append(errs, rc.deleteAll(ctx, k))
		}
	}
	errs = append(errs, rc.deleteMadeLate(ctx, late))
	if err := errors.Join(errs...); err != nil {
		ts.Logf("real cloud cleanup: %v", err)
	}
}

// deleteMadeLate deletes what late creates made (ids by the path of
// their create, "/v2.0/security-groups"), in the cleanup's order; one
// already gone is fine.
func (rc *realCloud) deleteMadeLate(ctx context.Context, late map[string][]string) error {
	var errs []error
	for _, k := range rc.ownedKinds() {
		for path, ids := range late {
			if strings.ReplaceAll(path[strings.LastIndex(path, "/")+1:], "-", "_") != k.kind {
				continue
			}
			for _, id := range ids {
				if err := k.delete(ctx, id); err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
					errs = append(errs, fmt.Errorf("delete the late create %s %s: %w", k.kind, id, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// deleteAll deletes every resource of kind k the cluster owns and waits
// until none is listed (servers take a moment to go, and their ports
// with them).
func (rc *realCloud) deleteAll(ctx context.Context, k ownedKind) error {
	ids, err := k.ids(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		cctx, cancel := context.WithTimeout(ctx, realCallTimeout)
		errs = append(errs, k.delete(cctx, id))
		cancel()
	}
	for deadline := time.Now().Add(time.Minute); len(ids) > 0 && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if ids, err = k.ids(ctx); err != nil {
			break
		}
	}
	if len(ids) > 0 {
		err = errors.Join(err, fmt.Errorf("%d %s left", len(ids), k.kind))
	}
	return errors.Join(append(errs, err)...)
}
