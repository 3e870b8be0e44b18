package openstack

import (
	"maps"
	"net/http"
	"slices"
)

// object is a stored Neutron resource: a pointer to a struct embedding meta.
type object[T any] interface {
	*T
	base() *meta
}

// base lets the generic Neutron handlers reach every resource's meta.
func (m *meta) base() *meta { return m }

// resource is one Neutron kind: list, show, create, update and delete are
// the same handlers for every kind (body {"<kind>": ...}, 201 on create,
// 204 on delete, revision-if-match on update); the hooks are what differs.
// Every hook runs with the lock held.
type resource[T any, P object[T]] struct {
	// kind is the body key ("security_group"), kind+"s" the collection.
	kind string
	// path is the URL collection ("security-groups").
	path  string
	items func(c *state) map[string]P
	// find returns a resource t may see, or the kind's 404.
	find func(c *state, id string, t *token) (P, *apiError)
	view func(c *state, x P, t *token) map[string]any
	// prepare, when set, runs before a list (the default security group
	// appears on the first one).
	prepare func(c *state, t *token)
	// create validates a POST's body and stores the new resource.
	create func(c *state, spec map[string]any, t *token) (P, *apiError)
	// update, when set, serves PUT: spec carries only attrs (readOnly
	// ones are refused) and revision-if-match passed; it validates and
	// applies spec, touching x.
	update          func(c *state, x P, spec map[string]any, t *token) *apiError
	attrs, readOnly []string
	// remove refuses or performs a delete.
	remove func(c *state, x P, t *token) *apiError
}

// routes serves the kind's collection and items on mux.
func (k resource[T, P]) routes(s *Cloud, mux *http.ServeMux) {
	base := "/v2.0/" + k.path
	mux.HandleFunc("GET "+base, s.neutron(k.list))
	mux.HandleFunc("POST "+base, s.neutron(k.post))
	mux.HandleFunc("GET "+base+"/{id}", s.neutron(k.show))
	if k.update != nil {
		mux.HandleFunc("PUT "+base+"/{id}", s.neutron(k.put))
	}
	mux.HandleFunc("DELETE "+base+"/{id}", s.neutron(k.destroy))
}

func (k resource[T, P]) list(c *call) (any, error) {
	st := c.s.st
	st.mu.Lock()
	if k.prepare != nil {
		k.prepare(st, c.t)
	}
	items := k.items(st)
	ids := slices.SortedFunc(maps.Keys(items), func(a, b string) int { return int(items[a].base().seq - items[b].base().seq) })
	var views []map[string]any
	for _, id := range ids {
		if x, e := k.find(st, id, c.t); e == nil {
			views = append(views, k.view(st, x, c.t))
		}
	}
	attrs := keys(k.view(st, P(new(T)), c.t))
	st.unlock()
	return c.list(k.kind+"s", attrs, views)
}

func (k resource[T, P]) show(c *call) (any, error) {
	return k.one(c, func(st *state, x P) (any, error) {
		return map[string]any{k.kind: k.view(st, x, c.t)}, nil
	})
}

// one runs f on the resource of the path's id, with the lock held.
func (k resource[T, P]) one(c *call, f func(st *state, x P) (any, error)) (any, error) {
	st := c.s.st
	st.mu.Lock()
	defer st.unlock()
	x, e := k.find(st, c.r.PathValue("id"), c.t)
	if e != nil {
		return nil, e
	}
	return f(st, x)
}

func (k resource[T, P]) post(c *call) (any, error) {
	spec, e := neutronSpec(c.r, k.kind)
	if e != nil {
		return nil, e
	}
	st := c.s.st
	st.mu.Lock()
	defer st.unlock()
	x, e := k.create(st, spec, c.t)
	if e != nil {
		return nil, e
	}
	return created(map[string]any{k.kind: k.view(st, x, c.t)}), nil
}

func (k resource[T, P]) put(c *call) (any, error) {
	spec, e := neutronSpec(c.r, k.kind)
	if e != nil {
		return nil, e
	}
	return k.one(c, func(st *state, x P) (any, error) {
		if e := ifMatch(c.r, *x.base()); e != nil {
			return nil, e
		}
		if e := st.checkAttrs(spec, false, k.attrs, k.readOnly); e != nil {
			return nil, e
		}
		if e := k.update(st, x, spec, c.t); e != nil {
			return nil, e
		}
		return map[string]any{k.kind: k.view(st, x, c.t)}, nil
	})
}

func (k resource[T, P]) destroy(c *call) (any, error) {
	return k.one(c, func(st *state, x P) (any, error) {
		if e := k.remove(st, x, c.t); e != nil {
			return nil, e
		}
		return noContent(), nil
	})
}
