package tcrancher

import (
	"sort"
	"strings"

	"github.com/talosc/talosc/pkg/rancherapi"
)

// Marks of the bindings Rancher keeps for itself (plugins.md §2.9).
const (
	creatorAnnotation = "authz.management.cattle.io/creator-owner-binding"
	grbOwnerLabel     = "authz.management.cattle.io/grb-owner"
)

// kept reports a binding the plugin never removes: the creator's
// (annotation, or a creator- name), one a GlobalRole's
// inheritedClusterRoles made (crtb-grb-*, which Rancher recreates), a
// group's, and any of a role other than the two tiers'.
func kept(b rancherapi.Binding) bool {
	_, grb := b.Labels[grbOwnerLabel]
	return b.Annotations[creatorAnnotation] == "true" || strings.HasPrefix(b.Name, "creator-") || grb ||
		b.GroupPrincipalID != "" || b.UserPrincipalID == "" || (b.RoleTemplateID != roleOwner && b.RoleTemplateID != roleMember)
}

// changes are what a binding reconcile does.
type changes struct {
	add    []binding
	remove []rancherapi.Binding
}

// reconcile is RA-7: every desired binding that no binding gives yet is
// added; every individual user binding of a tier's role that is not
// desired, or that repeats one already there (Rancher 2.8–2.14 keep
// identical bindings side by side), is removed; kept bindings are never
// touched, and one that gives a desired pair satisfies it.
func reconcile(desired map[binding][]string, existing []rancherapi.Binding) changes {
	var ch changes
	have := map[binding]bool{}
	for _, b := range existing {
		if kept(b) && b.UserPrincipalID != "" {
			have[binding{principal: b.UserPrincipalID, role: b.RoleTemplateID}] = true
		}
	}
	for _, b := range existing {
		if kept(b) {
			continue
		}
		key := binding{principal: b.UserPrincipalID, role: b.RoleTemplateID}
		if _, want := desired[key]; want && !have[key] {
			have[key] = true
			continue
		}
		ch.remove = append(ch.remove, b)
	}
	for b := range desired {
		if !have[b] {
			ch.add = append(ch.add, b)
		}
	}
	sort.Slice(ch.add, func(i, j int) bool {
		return ch.add[i].role+ch.add[i].principal < ch.add[j].role+ch.add[j].principal
	})
	return ch
}

// empty reports nothing to change.
func (ch changes) empty() bool { return len(ch.add) == 0 && len(ch.remove) == 0 }
