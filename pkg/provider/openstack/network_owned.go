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

// ownerMarker is the ownership marker a Neutron create carries in its
// description: Neutron before Zed refuses tags in POST, so a resource is
// recognisable as the cluster's from the moment it exists, and a run
// killed before tagging it leaves something the next run can adopt.
func ownerMarker(cluster string) string { return TagManagedBy + " " + ClusterTag(cluster) }

// ownerDescription is the description of a resource talosc creates: base
// (the reference's description, a floating IP's name; may be empty)
// followed by the marker.
func ownerDescription(cluster, base string) string {
	if base == "" {
		return ownerMarker(cluster)
	}
	return base + " (" + ownerMarker(cluster) + ")"
}

// describedOwned reports a description carrying the marker of cluster.
func describedOwned(desc, cluster string) bool {
	return desc == ownerMarker(cluster) || strings.HasSuffix(desc, " ("+ownerMarker(cluster)+")")
}

// baseDescription is desc without the marker of cluster (a floating IP's
// name).
func baseDescription(desc, cluster string) string {
	return strings.TrimSuffix(desc, " ("+ownerMarker(cluster)+")")
}

// attrs are what ownership is decided from.
type attrs struct {
	id, desc string
	tags     []string
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
}

// neutronCreate is one Neutron resource to create and tag.
type neutronCreate[T any] struct {
	lookup[T]
	// create posts the resource, with ownerDescription in its description.
	create func(context.Context) (*T, error)
	del    func(ctx context.Context, id string) error
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
			return slices.DeleteFunc(all, func(x T) bool { return !describedOwned(r.attrs(x).desc, cluster) }), err
		},
		id: func(x T) string { return r.attrs(x).id },
		uses: func(ctx context.Context, found []T) ([]bool, error) {
			return neutronUses(ctx, c, r.kind, r.attrs, found)
		},
		drop: func(ctx context.Context, x T) error {
			return c.deleteNeutron(ctx, plan, r.kind, r.name, r.attrs(x).id, r.del)
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

// deleteNeutron deletes one resource through plan; one already gone is no
// error (a retried or concurrent run).
func (c *Cloud) deleteNeutron(ctx context.Context, plan *provider.Plan, kind, name, id string, del func(context.Context, string) error) error {
	return plan.Do(ctx, state.Change{Action: state.ActionDelete, Kind: kind, Name: name}, func(ctx context.Context) error {
		if err := del(ctx, id); err != nil && !isNotFound(err) {
			return err
		}
		return nil
	})
}
