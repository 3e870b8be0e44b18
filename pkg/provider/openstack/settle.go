package openstack

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/provider"
)

// createAttempts bounds how often a create whose answer was lost, and
// which did not happen, is sent again.
const createAttempts = 3

// lateCreate is one create whose outcome may be unknown, settled by the
// rule of provider's seam.go ("A late create"): every create talosc makes
// on OpenStack goes through settle.
type lateCreate[T any] struct {
	// what names the resource in messages: "server c-controlplane-01".
	what string
	// create sends the create once.
	create func(context.Context) (T, error)
	// exists reports a refusal saying the resource is there already (a
	// rule's 409): it is looked for once, with no wait. Nil: none is.
	exists func(error) bool
	// find lists what the create would have made: the owned resources of
	// its deterministic name and marker (a rule: of its content).
	find func(context.Context) ([]T, error)
	// id names one found.
	id func(T) string
	// uses reports, for each of several found, whether something depends
	// on it; an error counts every one in use (fail closed). Nil: the
	// service refuses a second one (a rule, an interface), so there is
	// never more than one.
	uses func(ctx context.Context, found []T) ([]bool, error)
	// drop deletes an unused one, through the plan.
	drop func(context.Context, T) error
}

// settle sends l's create; when its outcome is unknown it looks for what
// the create would have made for provider.LateWindow of the request
// timeout (provider.AwaitLate), adopts it when it appears and creates
// again only when nothing did. Several found (a create applied late
// besides the one sent again) are resolved by dedupe. A look that fails
// fails the create: an unknown outcome is never read as "not made".
func settle[T any](ctx context.Context, c *Cloud, l lateCreate[T]) (T, error) {
	var zero T
	window := provider.LateWindow(c.opts.RequestTimeout)
	for attempt := 1; ; attempt++ {
		x, err := l.create(ctx)
		exists := err != nil && l.exists != nil && l.exists(err)
		if err == nil || ctx.Err() != nil || (!exists && !maybeApplied(err)) {
			return x, err
		}
		wait := window
		if exists {
			wait = 0
		}
		found, lerr := provider.AwaitLate(ctx, wait, l.find)
		switch {
		case lerr != nil:
			return zero, errors.Join(err, wrap(lerr, "find out whether %s was created after all", l.what))
		case len(found) > 0:
			c.opts.Logf("openstack: create %s: %v; it was made all the same (%s): adopting it", l.what, err, l.id(found[0]))
			return dedupe(ctx, c, l, found)
		case exists || attempt == createAttempts:
			return zero, err
		}
		c.opts.Logf("openstack: create %s: %v; it was not made within %s: creating it again (%d of %d)", l.what, err, window, attempt+1, createAttempts)
	}
}

// dedupe keeps one of the owned resources found by one name
// (provider.DedupeOwned): the one in use, or the first when none is; it
// deletes the others and says so. Two or more in use are refused, named.
func dedupe[T any](ctx context.Context, c *Cloud, l lateCreate[T], found []T) (T, error) {
	if len(found) == 1 || l.uses == nil {
		return found[0], nil
	}
	used, err := l.uses(ctx, found)
	keep, drop, err := judge(c, l.what, found, l.id, used, err)
	for _, x := range drop {
		if derr := l.drop(ctx, x); derr != nil {
			return keep, fmt.Errorf("%s: delete the unused duplicate %s: %w", l.what, l.id(x), derr)
		}
	}
	return keep, err
}

// judge is provider.DedupeOwned over several owned resources of one name
// given which are in use (used; an error reading it counts every one in
// use, fail closed), and says which it keeps and which it drops.
func judge[T any](c *Cloud, what string, found []T, id func(T) string, used []bool, uerr error) (keep T, drop []T, err error) {
	if uerr != nil {
		c.opts.Logf("openstack: %s: cannot tell which of its %d owned resources is in use (%v): counting every one in use", what, len(found), uerr)
	}
	dups := make([]provider.Duplicate[T], len(found))
	for i, x := range found {
		dups[i] = provider.Duplicate[T]{Item: x, ID: id(x), InUse: uerr != nil || used[i]}
	}
	keep, drop, err = provider.DedupeOwned(what, dups)
	if err != nil {
		return keep, nil, errors.Join(err, uerr)
	}
	ids := make([]string, len(drop))
	for i, x := range drop {
		ids[i] = id(x)
	}
	c.opts.Logf("openstack: %s: %d owned resources of this name (a create applied late): keeping %s, deleting unused %s", what, len(found), id(keep), strings.Join(ids, ", "))
	return keep, drop, nil
}
