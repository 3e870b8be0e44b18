package etcdbackup

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// membersTalos answers EtcdMemberList per node address.
type membersTalos struct {
	live.Talos
	answers map[string]func() ([]talosapi.Member, error)
}

func (m membersTalos) EtcdMembers(_ context.Context, node string) ([]talosapi.Member, error) {
	return m.answers[node]()
}

// The snapshot comes only from a control plane whose member answers the
// member list (which needs a quorum) and lists itself voting: an error,
// a list without it, or it as a learner each rule a node out, and when
// none is left nothing is taken.
func TestSourceNeedsAMemberThatProvesAQuorum(t *testing.T) {
	t.Parallel()
	cp := func(n int) provider.Machine {
		return provider.Machine{Hostname: "c-cp-0" + string(rune('0'+n)), Address: netip.MustParseAddr("127.0.0." + string(rune('0'+n)))}
	}
	voting := func(names ...string) func() ([]talosapi.Member, error) {
		return func() ([]talosapi.Member, error) {
			var ms []talosapi.Member
			for _, n := range names {
				ms = append(ms, talosapi.Member{Hostname: n})
			}
			return ms, nil
		}
	}
	noLeader := func() ([]talosapi.Member, error) { return nil, errors.New("etcdserver: no leader") }
	learner := func() ([]talosapi.Member, error) {
		return []talosapi.Member{{Hostname: "c-cp-01"}, {Hostname: "c-cp-02", Learner: true}}, nil
	}
	for _, tc := range []struct {
		name    string
		answers map[string]func() ([]talosapi.Member, error)
		want    string // hostname, or a part of the error
	}{
		{"the first answers", map[string]func() ([]talosapi.Member, error){"127.0.0.1": voting("c-cp-01", "c-cp-02")}, "c-cp-01"},
		{"the first has no leader", map[string]func() ([]talosapi.Member, error){"127.0.0.1": noLeader, "127.0.0.2": voting("c-cp-01", "c-cp-02")}, "c-cp-02"},
		{"the first is not a member", map[string]func() ([]talosapi.Member, error){"127.0.0.1": voting("c-cp-02"), "127.0.0.2": voting("c-cp-02")}, "c-cp-02"},
		{"a learner is skipped", map[string]func() ([]talosapi.Member, error){"127.0.0.1": noLeader, "127.0.0.2": learner}, "c-cp-02: a learner"},
		{"none proves a quorum", map[string]func() ([]talosapi.Member, error){"127.0.0.1": noLeader, "127.0.0.2": noLeader}, "no control plane's etcd proved it has a quorum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := source(t.Context(), membersTalos{answers: tc.answers}, []provider.Machine{cp(1), cp(2)})
			if err != nil {
				if !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want it to say %q", err, tc.want)
				}
				return
			}
			if got.Hostname != tc.want {
				t.Fatalf("source %s, want %s", got.Hostname, tc.want)
			}
		})
	}
}
