package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"

	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// TagsNotPersistedError reports a Neutron resource whose ownership tags did
// not stick (reference I-F2). The resource was deleted again: left behind
// untagged it could never be adopted, nor deleted, by a later run.
type TagsNotPersistedError struct {
	// Kind is the change kind ("openstack:network"), Name and ID the resource.
	Kind, Name, ID string
}

func (e *TagsNotPersistedError) Error() string {
	return fmt.Sprintf("Neutron did not persist ownership tags on %s %s (%s); it was deleted again", kindWord(e.Kind), e.Name, e.ID)
}

// neutronCreate is one Neutron resource to create and tag.
type neutronCreate struct {
	kind       string // change kind
	collection string // URL collection of the tags API ("networks", "security-groups")
	name       string
	tags       []string
	create     func(context.Context) (id string, err error)
	del        func(ctx context.Context, id string) error
}

// createOwned creates a resource, then tags it and reads the tags back:
// gophercloud's create options carry no tags and Neutron before the
// tag-creation extension (Zed) refuses them in POST. A resource whose tags
// failed or did not persist is deleted and the run fails.
func (c *Cloud) createOwned(ctx context.Context, r neutronCreate) error {
	id, err := r.create(ctx)
	if err != nil {
		return err
	}
	err = c.tagAndVerify(ctx, r, id)
	if err == nil {
		return nil
	}
	if derr := r.del(ctx, id); derr != nil && !isNotFound(derr) {
		err = errors.Join(err, wrap(derr, "delete the untagged %s %s (%s) by hand", kindWord(r.kind), r.name, id))
	}
	return err
}

func (c *Cloud) tagAndVerify(ctx context.Context, r neutronCreate, id string) error {
	if err := attributestags.ReplaceAll(ctx, c.network, r.collection, id, attributestags.ReplaceAllOpts{Tags: r.tags}).Err; err != nil {
		return wrap(err, "tag %s %s (%s)", kindWord(r.kind), r.name, id)
	}
	got, err := attributestags.List(ctx, c.network, r.collection, id).Extract()
	if err != nil {
		return wrap(err, "read back the tags of %s %s (%s)", kindWord(r.kind), r.name, id)
	}
	for _, t := range r.tags {
		if !slices.Contains(got, t) {
			return &TagsNotPersistedError{Kind: r.kind, Name: r.name, ID: id}
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
