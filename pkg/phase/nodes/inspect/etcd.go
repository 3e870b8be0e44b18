package inspect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/siderolabs/talos/pkg/machinery/config/configloader"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/talos/identity"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// etcd looks at etcd's hygiene through talosconfig's endpoint, with the
// cluster's identity, as `tc-nodes backup` does (no provider credentials):
// the member list of the endpoint's member (it needs a leader), then each
// desired control plane's member status and database quota, through the
// address its member advertises. What cannot be read is reported
// incomplete, never "fine".
func (rep *checkReport) etcd(ctx context.Context, cfg *config.Cluster, dial live.TalosDialer) {
	e := &report.EtcdCheck{Members: []report.EtcdMember{}}
	rep.Etcd = e
	t, endpoint, err := openTalos(ctx, cfg, dial)
	if err != nil {
		e.Reason = "etcd not looked at: " + err.Error()
		rep.Incomplete = append(rep.Incomplete, e.Reason)
		return
	}
	defer func() { _ = t.Close() }()
	members, err := t.EtcdMembers(ctx, endpoint)
	if err != nil {
		e.Reason = fmt.Sprintf("etcd not looked at: the member list of %s did not answer: %v", endpoint, err)
		rep.Incomplete = append(rep.Incomplete, e.Reason)
		return
	}
	var reads []etcdRead
	for _, m := range cfg.Hostnames() {
		if m.Role == config.RoleControlPlane {
			reads = append(reads, readEtcd(ctx, t, m.Hostname, members))
		}
	}
	j := judgeEtcd(members, reads)
	*e = j.check
	rep.Items = append(rep.Items, j.items...)
	rep.Incomplete = append(rep.Incomplete, j.incomplete...)
}

// openTalos opens a Talos session through talosconfig's endpoint with the
// identity of talossecrets.yaml, and returns the endpoint's address.
func openTalos(ctx context.Context, cfg *config.Cluster, dial live.TalosDialer) (live.Talos, string, error) {
	id, err := identity.Load(filepath.Join(cfg.Dir, config.TalosSecretsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%s is missing in %s (has converge run?)", config.TalosSecretsFile, cfg.Dir)
	}
	if err != nil {
		return nil, "", err
	}
	path, ok := phase.ClientFile(cfg, config.TalosconfigFile)
	var endpoint string
	if ok {
		endpoint, ok, err = identity.ReadTalosconfigEndpoint(path)
	}
	if err != nil || !ok {
		return nil, "", fmt.Errorf("%s records no endpoint (has converge run?)", config.TalosconfigFile)
	}
	t, err := dial(ctx, id, cfg.Name, endpoint)
	if err != nil {
		return nil, "", fmt.Errorf("the Talos API at %s did not answer: %w", endpoint, err)
	}
	if host, _, err := net.SplitHostPort(endpoint); err == nil {
		endpoint = host
	}
	return t, endpoint, nil
}

// errNoMember: a desired control plane the member list does not name has
// no etcd member to ask.
var errNoMember = errors.New("no etcd member (has it joined?)")

// readEtcd reads host's member status and quota, through the address its
// member advertises in its peer URL.
func readEtcd(ctx context.Context, t live.Talos, host string, members []talosapi.Member) etcdRead {
	r := etcdRead{host: host}
	i := slices.IndexFunc(members, func(m talosapi.Member) bool { return m.Hostname == host })
	if i < 0 {
		r.err = errNoMember
		return r
	}
	if r.addr = peerAddr(members[i].PeerURLs); r.addr == "" {
		r.err = fmt.Errorf("its member advertises no peer address (%q)", members[i].PeerURLs)
		return r
	}
	if r.status, r.err = t.EtcdStatus(ctx, r.addr); r.err != nil {
		r.err = fmt.Errorf("did not answer EtcdStatus: %w", r.err)
		return r
	}
	mc, err := t.MachineConfig(ctx, r.addr)
	if err == nil {
		r.quota, err = etcdQuota(mc)
	}
	if err != nil {
		r.quotaErr = fmt.Errorf("its machine configuration did not say its database quota: %w", err)
	}
	return r
}

// peerAddr is the host of a member's first peer URL.
func peerAddr(peers []string) string {
	for _, p := range peers {
		if u, err := url.Parse(p); err == nil && u.Hostname() != "" {
			return u.Hostname()
		}
	}
	return ""
}

// etcdQuota is the database quota a machine configuration gives etcd:
// cluster.etcd.extraArgs' quota-backend-bytes, else etcd's default (which
// Talos keeps). A configuration that does not load, or a value that is no
// positive number, is unknown (0).
func etcdQuota(machineConfig []byte) (int64, error) {
	c, err := configloader.NewFromBytes(machineConfig)
	if err != nil {
		return 0, err
	}
	if c.Cluster() == nil || c.Cluster().Etcd() == nil {
		return defaultEtcdQuota, nil
	}
	v := c.Cluster().Etcd().ExtraArgs()["quota-backend-bytes"]
	if len(v) == 0 {
		return defaultEtcdQuota, nil
	}
	q, err := strconv.ParseInt(v[len(v)-1], 10, 64)
	if err != nil || q <= 0 {
		return 0, fmt.Errorf("quota-backend-bytes %q is no positive number of bytes", v[len(v)-1])
	}
	return q, nil
}
