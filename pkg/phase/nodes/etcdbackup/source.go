package etcdbackup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// source picks the control plane the snapshot is streamed from: the first,
// in hostname order, whose etcd member answers the member list (which
// needs a leader, so a quorum) and lists itself as a voting member. A
// member cut off from the quorum would serve a stale snapshot, so one
// that cannot prove it has one is never used; when none can, the backup
// fails naming each node's answer.
func source(ctx context.Context, t live.Talos, cps []provider.Machine) (provider.Machine, error) {
	var why []string
	for _, m := range cps {
		if !m.Address.IsValid() {
			why = append(why, m.Hostname+": no address known")
			continue
		}
		members, err := t.EtcdMembers(ctx, m.Address.String())
		if err != nil {
			why = append(why, fmt.Sprintf("%s: %v", m.Hostname, err))
			continue
		}
		i := slices.IndexFunc(members, func(mb talosapi.Member) bool { return mb.Hostname == m.Hostname })
		switch {
		case i < 0:
			why = append(why, m.Hostname+": not an etcd member")
		case members[i].Learner:
			why = append(why, m.Hostname+": a learner, not yet voting")
		default:
			return m, nil
		}
	}
	if len(why) == 0 {
		return provider.Machine{}, errors.New("no control-plane machine is in the inventory")
	}
	return provider.Machine{}, fmt.Errorf("no control plane's etcd proved it has a quorum, so no snapshot is taken (a stale one would pass for current): %s; if etcd has lost its quorum, restore from the newest backup", strings.Join(why, "; "))
}
