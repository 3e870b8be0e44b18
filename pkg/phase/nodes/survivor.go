package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/talosapi"
)

// survivor is the first control plane's etcd (it is always desired, so it
// survives a scale-down), asked who is a member before a node is deleted
// or a control plane rebooted.
type survivor struct {
	host    string
	session func(ctx context.Context) (talosAPI, string, error)
}

// survivor is the run's survivor.
func (r *run) survivor() survivor {
	return survivor{host: r.cp1().Hostname, session: func(ctx context.Context) (talosAPI, string, error) {
		return r.clients.talosSession(ctx, r.id, r.obs)
	}}
}

// provedGone refuses to delete an addressless control plane unless the
// etcd member list on a surviving control plane proves it is no member
// (I-S9): NotReady and discovery prove nothing; a failed query refuses.
func (s survivor) provedGone(ctx context.Context, host string) error {
	member, found, err := s.member(ctx, host)
	if err != nil {
		return fmt.Errorf("no address for control plane %s and the etcd member list could not be read or proves nothing: refusing to delete it: %w", host, err)
	}
	if found {
		_, ep, _ := s.session(ctx)
		return fmt.Errorf("no address for control plane %s, and it is still an etcd member (id %016x on control plane %s); NotReady does not prove it left etcd: reset it by hand or remove the member, then re-run", host, member.ID, ep)
	}
	return nil
}

// errUnnamedMember is an etcd member without a name: added, never started;
// which node it is cannot be told (I-S10).
var errUnnamedMember = errors.New("an etcd member has no name (added but never started), so which node it is cannot be told")

// member looks host up in the survivor's etcd member list (members):
// absent from a plausible list is proof it is no member.
func (s survivor) member(ctx context.Context, host string) (talosapi.Member, bool, error) {
	members, err := s.members(ctx)
	if err != nil {
		return talosapi.Member{}, false, err
	}
	for _, m := range members {
		if m.Hostname == host {
			return m, true, nil
		}
	}
	return talosapi.Member{}, false, nil
}

// members is the survivor's etcd member list, refused when it proves nothing about
// who is a member: a member without a name fails closed (I-S10), and so
// does a list that does not name the survivor that answered it (empty, or
// another cluster's: such a list would "prove" every node gone).
func (s survivor) members(ctx context.Context) ([]talosapi.Member, error) {
	c, ep, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	members, err := c.EtcdMembers(ctx, ep)
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		if m.Hostname == "" {
			return nil, fmt.Errorf("%w (id %016x)", errUnnamedMember, m.ID)
		}
	}
	survivor := s.host
	if !slices.ContainsFunc(members, func(m talosapi.Member) bool { return m.Hostname == survivor }) {
		return nil, fmt.Errorf("the etcd member list of %s (%s) does not name %s itself (%d members), so it proves nothing about who is a member", survivor, ep, survivor, len(members))
	}
	return members, nil
}

// remove removes an etcd member by id through the survivor.
func (s survivor) remove(ctx context.Context, id uint64) error {
	c, ep, err := s.session(ctx)
	if err != nil {
		return err
	}
	return c.EtcdRemoveMember(ctx, ep, id)
}

// allowsUpgrade refuses a control-plane upgrade that etcd cannot
// survive (Talos's own ValidateForUpgrade): a member that never started
// (which node it is cannot be told), or exactly two members (one
// rebooting loses quorum). An unreadable member list, or one that
// proves nothing (members), refuses too.
func (s survivor) allowsUpgrade(ctx context.Context, ups []talosUpgrade) error {
	if !slices.ContainsFunc(ups, func(u talosUpgrade) bool { return u.machine.Role == config.RoleControlPlane }) {
		return nil
	}
	members, err := s.members(ctx)
	if err != nil {
		return fmt.Errorf("the etcd member list could not be read or proves nothing, so whether a control plane may reboot is unknown; refusing to upgrade: %w", err)
	}
	if len(members) == 2 {
		return errors.New("refusing to upgrade control planes: etcd has 2 members, and one rebooting loses quorum; add a third control plane first")
	}
	return nil
}
