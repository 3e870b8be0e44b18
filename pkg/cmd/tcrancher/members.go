package tcrancher

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/talosc/talosc/pkg/rancherapi"
)

// Role templates of the two tiers.
const (
	roleOwner  = "cluster-owner"
	roleMember = "cluster-member"
)

// tierRole maps a tier to its cluster role template.
func tierRole(tier string) string {
	if tier == "admins" {
		return roleOwner
	}
	return roleMember
}

// member is one configured name of a tier.
type member struct{ name, tier string }

func (m member) String() string { return fmt.Sprintf("'%s' (tier %s)", m.name, m.tier) }

// stem is what a member is searched by: the name without an email domain
// (RA-5).
func (m member) stem() string {
	s, _, _ := strings.Cut(m.name, "@")
	return s
}

// members lists the section's names, admins first.
func members(sec map[string]any) []member {
	var out []member
	for _, tier := range tiers() {
		list, _ := sec[tier].([]any)
		for _, x := range list {
			if s, ok := x.(string); ok {
				out = append(out, member{name: strings.TrimSpace(s), tier: tier})
			}
		}
	}
	return out
}

// pick chooses the principal that is m among a search's rows (RA-5): a
// user whose id, past "://", is the stem exactly (Shibboleth with LDAP,
// and the SAML and OIDC providers that echo the query back), or whose
// login name is (local users, whose id is local://u-xxxxx; LDAP and AD,
// whose id is a DN). A prefix or substring match is never enough: the
// search returns alicia for alice. Two different principals are
// ambiguous.
func pick(m member, rows []rancherapi.Principal) (rancherapi.Principal, string) {
	stem := m.stem()
	var found []rancherapi.Principal
	for _, p := range rows {
		_, idStem, _ := strings.Cut(p.ID, "://")
		if p.PrincipalType == "user" && (idStem == stem || p.LoginName == stem) &&
			!slices.ContainsFunc(found, func(q rancherapi.Principal) bool { return q.ID == p.ID }) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], ""
	case 0:
		return rancherapi.Principal{}, "no user principal is exactly " + stem
	}
	ids := make([]string, len(found))
	for i, p := range found {
		ids[i] = p.ID
	}
	return rancherapi.Principal{}, fmt.Sprintf("%d user principals are exactly %s (%s)", len(found), stem, strings.Join(ids, ", "))
}

// resolved are the members with their principals.
type resolved map[member]rancherapi.Principal

// resolve finds every member's principal, and refuses — before anything
// changes — when any cannot be resolved (RA-5) or two names of different
// tiers are one principal (RA-6).
func resolve(ctx context.Context, c *rancherapi.Client, ms []member) (resolved, error) {
	out := resolved{}
	var unresolved []string
	for _, m := range ms {
		rows, err := c.SearchUsers(ctx, m.stem())
		if err != nil {
			return nil, fmt.Errorf("search Rancher principals for %s: %w", m, err)
		}
		p, why := pick(m, rows)
		if why != "" {
			unresolved = append(unresolved, m.String()+": "+why)
			continue
		}
		out[m] = p
	}
	if len(unresolved) > 0 {
		return nil, fmt.Errorf("could not resolve Rancher principals for configured member(s): %s; refusing to change memberships (fix the names under rancher.admins/rancher.users)",
			strings.Join(unresolved, "; "))
	}
	if clash := out.collisions(); len(clash) > 0 {
		return nil, fmt.Errorf("configured members of different tiers are one Rancher principal: %s; refusing to change memberships (list each person under one tier)", strings.Join(clash, "; "))
	}
	return out, nil
}

// collisions are the principals two names of different tiers resolve to.
func (r resolved) collisions() []string {
	byID := map[string][]member{}
	for m, p := range r {
		byID[p.ID] = append(byID[p.ID], m)
	}
	var out []string
	for id, ms := range byID {
		sort.Slice(ms, func(i, j int) bool { return ms[i].String() < ms[j].String() })
		if slices.ContainsFunc(ms, func(m member) bool { return m.tier != ms[0].tier }) {
			names := make([]string, len(ms))
			for i, m := range ms {
				names[i] = m.String()
			}
			out = append(out, strings.Join(names, " and ")+" are "+id)
		}
	}
	sort.Strings(out)
	return out
}

// binding is one desired (principal, role) pair.
type binding struct{ principal, role string }

// desired are the bindings the members call for.
func (r resolved) desired() map[binding][]string {
	out := map[binding][]string{}
	for m, p := range r {
		b := binding{principal: p.ID, role: tierRole(m.tier)}
		out[b] = append(out[b], m.name)
	}
	return out
}
