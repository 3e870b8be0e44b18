package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// etcdVerdict is what the control planes' etcd says of the cluster. The
// zero value is unknown: a decision nobody made refuses.
type etcdVerdict int

const (
	// etcdUnknown: some control plane could not be read and none showed
	// that etcd ran.
	etcdUnknown etcdVerdict = iota
	// etcdNeverRan: every control plane was read and none has ever run
	// etcd: never bootstrapped.
	etcdNeverRan
	// etcdRan: some control plane's etcd runs or has data: bootstrapped.
	etcdRan
)

// cpEtcd is one existing control plane's etcd as read; err when it could
// not be read.
type cpEtcd struct {
	host  string
	state talosapi.EtcdState
	err   error
}

// decideEtcd decides whether the cluster was ever bootstrapped from its
// existing control planes' etcd, and says why. Talos serves a kubeconfig
// before bootstrap, so only etcd tells: a control plane whose etcd runs or
// whose data directory holds anything belongs to a bootstrapped cluster
// (enough on its own, whatever the others say: bootstrapping again would
// make a second etcd cluster). "Never bootstrapped" needs every control
// plane read, each with etcd not running and an empty data directory (a
// never-bootstrapped control plane waits in Preparing for someone to add
// it). A control plane that could not be read, or runs no etcd service at
// all, leaves the answer unknown. No control plane at all: nothing ever
// ran etcd.
func decideEtcd(cps []cpEtcd) (etcdVerdict, string) {
	var ran, unknown, never []string
	for _, c := range cps {
		switch {
		case c.err == nil && c.state.Ran():
			ran = append(ran, fmt.Sprintf("%s: etcd %s, data directory %s", c.host, c.state.Service, dataWord(c.state.Data)))
		case c.err != nil:
			unknown = append(unknown, fmt.Sprintf("%s: %v", c.host, c.err))
		case c.state.Service == "":
			unknown = append(unknown, c.host+": runs no etcd service")
		default:
			never = append(never, fmt.Sprintf("%s: etcd %s, data directory empty", c.host, c.state.Service))
		}
	}
	switch {
	case len(ran) > 0:
		return etcdRan, strings.Join(ran, "; ")
	case len(unknown) > 0:
		return etcdUnknown, strings.Join(unknown, "; ")
	case len(never) == 0:
		return etcdNeverRan, "no control plane exists yet"
	}
	return etcdNeverRan, strings.Join(never, "; ")
}

func dataWord(data bool) string {
	if data {
		return "not empty"
	}
	return "empty"
}

// errRanElsewhere cancels the reads still waiting once a control plane
// showed that etcd ran: the verdict is made.
var errRanElsewhere = errors.New("another control plane showed that etcd ran")

// readEtcd reads the etcd of every existing control plane, concurrently,
// each through its own address (a first control plane that is down hides
// no other), waiting for each Talos API up to the reachable budget.
func (r *run) readEtcd(ctx context.Context) []cpEtcd {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hosts := r.obs.existingControlPlanes(r.cfg.Name)
	out := make([]cpEtcd, len(hosts))
	var wg sync.WaitGroup
	for i, host := range hosts {
		wg.Go(func() {
			st, err := r.readEtcdOf(ctx, host)
			if err != nil && errors.Is(context.Cause(ctx), errRanElsewhere) {
				err = errRanElsewhere
			}
			out[i] = cpEtcd{host: host, state: st, err: err}
			if err == nil && st.Ran() {
				cancel(errRanElsewhere)
			}
		})
	}
	wg.Wait()
	return out
}

// errNoAddress: a control plane has no address yet (a machine that never
// ran), so its etcd cannot be asked now.
var errNoAddress = errors.New("no address known")

// onlyWithoutAddress reports that every control plane that could not be
// read lacked an address, and none showed that etcd ran.
func onlyWithoutAddress(cps []cpEtcd) bool {
	some := false
	for _, c := range cps {
		switch {
		case c.err == nil && c.state.Ran():
			return false
		case errors.Is(c.err, errNoAddress):
			some = true
		case c.err != nil:
			return false
		}
	}
	return some
}

// readEtcdOf reads one control plane's etcd through its own address.
func (r *run) readEtcdOf(ctx context.Context, host string) (talosapi.EtcdState, error) {
	addr, ok := r.obs.address(host)
	if !ok {
		return talosapi.EtcdState{}, errNoAddress
	}
	c, err := r.clients.seams.dialTalos(ctx, r.id, r.cfg.Name, addr)
	if err != nil {
		return talosapi.EtcdState{}, err
	}
	defer func() { _ = c.Close() }()
	if err := c.WaitReachable(ctx, addr, r.scaled(reachableBudget), r.scaled(reachablePoll), r.waiting(host)); err != nil {
		return talosapi.EtcdState{}, err
	}
	return c.EtcdState(ctx, addr)
}

// existingControlPlanes are the owned machines of cluster that are
// control planes: by their role, or by their name when a killed run left
// the role untagged.
func (o *observed) existingControlPlanes(cluster string) []string {
	prefix := cluster + "-" + config.RoleControlPlane + "-"
	var out []string
	for _, m := range o.inv.Machines {
		if m.Role == config.RoleControlPlane || m.Role == "" && strings.HasPrefix(m.Hostname, prefix) {
			out = append(out, m.Hostname)
		}
	}
	return out
}
