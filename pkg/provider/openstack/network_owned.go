package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// TagsNotPersistedError reports a Neutron resource whose ownership tags did
// not stick (reference I-F2). The resource was deleted again: tags are the
// full proof of ownership every other reader (status, destroy, another
// tool) relies on.
type TagsNotPersistedError struct {
	// Kind is the change kind ("openstack:network"), Name and ID the resource.
	Kind, Name, ID string
}

func (e *TagsNotPersistedError) Error() string {
	return fmt.Sprintf("Neutron did not persist ownership tags on %s %s (%s); it was deleted again", kindWord(e.Kind), e.Name, e.ID)
}

// owner is whom talosc's resources belong to: a cluster, in the
// credential's project. A resource is the cluster's only when it is of
// that project (its project_id) and carries the cluster's ownership tags
// or description marker (I-F6: an admin's lists show every project).
type owner struct{ cluster, project string }

// owner is cluster in the credential's project.
func (c *Cloud) owner(cluster string) owner { return owner{cluster: cluster, project: c.projectID} }

// markers are the ownership markers a Neutron create carries in its
// description: Neutron before Zed refuses tags in POST, so a resource is
// recognisable as the cluster's from the moment it exists, and a run
// killed before tagging it leaves something the next run can adopt. The
// first names the project and is the one talosc writes; the second is an
// older talosc's, accepted on a resource of the project.
func (o owner) markers() []string {
	legacy := TagManagedBy + " " + ClusterTag(o.cluster)
	return []string{legacy + " " + ProjectTag(o.project), legacy}
}

// description is the description of a resource talosc creates: base (the
// reference's description, a floating IP's name; may be empty) followed
// by the marker.
func (o owner) description(base string) string { return o.descriptions(base)[0] }

// descriptions are base followed by each marker, for list filters.
func (o owner) descriptions(base string) []string {
	out := o.markers()
	for i, m := range out {
		if base != "" {
			out[i] = base + " (" + m + ")"
		}
	}
	return out
}

// base is desc without a marker of o (a floating IP's name).
func (o owner) base(desc string) string {
	for _, m := range o.markers() {
		if b, ok := strings.CutSuffix(desc, " ("+m+")"); ok {
			return b
		}
	}
	return desc
}

// tagged reports a resource of o's project carrying the cluster's
// ownership tags (and no other project's tag).
func (o owner) tagged(a attrs) bool {
	return a.project == o.project && ownedIn(a.tags, o.cluster, o.project)
}

// described reports a resource of o's project whose description carries a
// marker of o.
func (o owner) described(a attrs) bool {
	return a.project == o.project && slices.ContainsFunc(o.markers(), func(m string) bool {
		return a.desc == m || strings.HasSuffix(a.desc, " ("+m+")")
	})
}

// owns reports a resource that is o's by its tags or its description.
func (o owner) owns(a attrs) bool { return o.tagged(a) || o.described(a) }

// attrs are what ownership is decided from.
type attrs struct {
	id, desc, project string
	tags              []string
}

// lookup is one Neutron resource of the cluster: what finds it, proves it
// owned, and tags it.
type lookup[T any] struct {
	kind       string // change kind
	collection string // URL collection of the tags API ("networks", "security-groups")
	name       string
	tags       []string // its ownership tags
	attrs      func(T) attrs
	// list lists the same-named candidates (floating IPs: same-described).
	list func(context.Context) ([]T, error)
	// del deletes one by id.
	del func(ctx context.Context, id string) error
}

// neutronCreate is one Neutron resource to create and tag.
type neutronCreate[T any] struct {
	lookup[T]
	// create posts the resource, with owner.description in its description.
	create func(context.Context) (*T, error)
}

// createOwned creates a resource (or adopts the one a create whose answer
// was lost made, see settle), then tags it and reads the tags back:
// gophercloud's create options carry no tags and Neutron before the
// tag-creation extension (Zed) refuses them in POST. A resource whose tags
// failed or did not persist is deleted, even when the run's context has
// ended (Ctrl-C between create and tag), and the run fails.
func createOwned[T any](ctx context.Context, c *Cloud, plan *provider.Plan, r neutronCreate[T], cluster string) (*T, error) {
	x, err := settle(ctx, c, r.settled(c, plan, cluster))
	if err != nil {
		return nil, err
	}
	id := r.attrs(x).id
	err = c.tagAndVerify(ctx, r.kind, r.collection, r.name, id, r.tags)
	if err == nil {
		return &x, nil
	}
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.RequestTimeout)
	defer cancel()
	if derr := r.del(cleanup, id); derr != nil && !isNotFound(derr) {
		err = errors.Join(err, wrap(derr, "delete the untagged %s %s (%s) by hand", kindWord(r.kind), r.name, id))
	}
	return nil, err
}

// settled is r's create as settle runs it: what it would have made is
// found by name and description marker, and a duplicate is deleted
// through plan.
func (r neutronCreate[T]) settled(c *Cloud, plan *provider.Plan, cluster string) lateCreate[T] {
	return lateCreate[T]{
		what: kindWord(r.kind) + " " + r.name,
		create: func(ctx context.Context) (T, error) {
			x, err := r.create(ctx)
			if err != nil || x == nil {
				var zero T
				return zero, err
			}
			return *x, nil
		},
		find: func(ctx context.Context) ([]T, error) {
			all, err := r.list(ctx)
			return slices.DeleteFunc(all, func(x T) bool { return !c.owner(cluster).described(r.attrs(x)) }), err
		},
		id: func(x T) string { return r.attrs(x).id },
		uses: func(ctx context.Context, found []T) ([]bool, error) {
			return neutronUses(ctx, c, r.kind, r.attrs, found)
		},
		drop: func(ctx context.Context, x T) error {
			return c.deleteNeutron(ctx, plan, r.twin(x))
		},
	}
}

func (c *Cloud) tagAndVerify(ctx context.Context, kind, collection, name, id string, tags []string) error {
	if err := attributestags.ReplaceAll(ctx, c.network, collection, id, attributestags.ReplaceAllOpts{Tags: tags}).Err; err != nil {
		return wrap(err, "tag %s %s (%s)", kindWord(kind), name, id)
	}
	got, err := attributestags.List(ctx, c.network, collection, id).Extract()
	if err != nil {
		return wrap(err, "read back the tags of %s %s (%s)", kindWord(kind), name, id)
	}
	for _, t := range tags {
		if !slices.Contains(got, t) {
			return &TagsNotPersistedError{Kind: kind, Name: name, ID: id}
		}
	}
	return nil
}

// untagged is a resource the reads found carrying the cluster's
// description marker but not its tags: made by a run that ended before
// tagging it.
type untagged struct {
	kind, collection, name, id string
	tags                       []string
}

// dropTwins deletes the unused second owned resources of a name the reads
// found (pickOwned): what a create of an earlier run made after its client
// had given up and made it again.
func (r *netReconciler) dropTwins(ctx context.Context) error {
	for _, d := range r.inv.twins {
		if err := r.c.deleteNeutron(ctx, r.plan, d); err != nil {
			return err
		}
	}
	return nil
}

// finishTags tags what a previous run created and could not tag.
func (r *netReconciler) finishTags(ctx context.Context) error {
	for _, u := range r.inv.untagged {
		change := state.Change{Action: state.ActionUpdate, Kind: u.kind, Name: u.name, Detail: "ownership tags (created by a run that ended before tagging it)"}
		if err := r.plan.Do(ctx, change, func(ctx context.Context) error {
			return r.c.tagAndVerify(ctx, u.kind, u.collection, u.name, u.id, u.tags)
		}); err != nil {
			return err
		}
	}
	return nil
}

// twin is x, an unused owned resource of l's name besides the one kept,
// as the run deletes it.
func (l lookup[T]) twin(x T) doomed {
	id := l.attrs(x).id
	return doomed{kind: l.kind, name: l.name, id: id, del: l.del, why: id + ": unused, a second one of this name (a create applied late)"}
}

// deleteNeutron deletes one resource through plan; one already gone is no
// error (a retried or concurrent run).
func (c *Cloud) deleteNeutron(ctx context.Context, plan *provider.Plan, d doomed) error {
	return plan.Do(ctx, state.Change{Action: state.ActionDelete, Kind: d.kind, Name: d.name, Detail: d.why}, func(ctx context.Context) error {
		if err := d.del(ctx, d.id); err != nil && !isNotFound(err) {
			return err
		}
		return nil
	})
}
