package proxmox

import (
	"net/http"
	"strings"
)

// apiPrefix is where pveproxy serves the JSON API.
const apiPrefix = "/api2/json"

// call is one API request being served.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	p    params
	path map[string]string
	tok  *token
}

// handler serves one route: it returns the "data" to send, or an error.
type handler func(c *call) (any, error)

// route is a method plus a path pattern: literal segments, {name} for one
// segment and {name...} for the rest of the path (volume ids and UPIDs
// carry ':' and '/' unescaped, as go-proxmox sends them).
type route struct {
	method string
	segs   []string
	h      handler
	// raw routes read the body themselves (multipart upload).
	raw bool
}

type router struct {
	routes []route
}

func (rt *router) handle(method, pattern string, h handler) {
	rt.routes = append(rt.routes, route{method: method, segs: splitPath(pattern), h: h})
}

func (rt *router) handleRaw(method, pattern string, h handler) {
	rt.routes = append(rt.routes, route{method: method, segs: splitPath(pattern), h: h, raw: true})
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// match finds the route for method and path.
func (rt *router) match(method, path string) (*route, map[string]string) {
	segs := splitPath(path)
	for i := range rt.routes {
		r := &rt.routes[i]
		if r.method != method {
			continue
		}
		if vars, ok := matchSegs(r.segs, segs); ok {
			return r, vars
		}
	}
	return nil, nil
}

func matchSegs(pattern, segs []string) (map[string]string, bool) {
	vars := map[string]string{}
	for i, p := range pattern {
		if name, ok := strings.CutPrefix(p, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			if rest, ok := strings.CutSuffix(name, "..."); ok {
				if i >= len(segs) {
					return nil, false
				}
				vars[rest] = strings.Join(segs[i:], "/")
				return vars, true
			}
			if i >= len(segs) || segs[i] == "" {
				return nil, false
			}
			vars[name] = segs[i]
			continue
		}
		if i >= len(segs) || segs[i] != p {
			return nil, false
		}
	}
	return vars, len(segs) == len(pattern)
}

// ServeHTTP authenticates, routes, checks the node in the path and writes
// the handler's answer in PVE's envelope.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !ok {
		s.unhandledCall(r)
		writeJSON(w, http.StatusNotImplemented, map[string]any{"data": nil, "message": "Method '" + r.Method + " " + r.URL.Path + "' not implemented\n"})
		return
	}
	tok, err := s.authenticate(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	rt, vars := s.router.match(r.Method, path)
	if rt == nil {
		s.unhandledCall(r)
		writeErr(w, &apiError{status: http.StatusNotImplemented, message: "Method '" + r.Method + " " + path + "' not implemented"})
		return
	}
	c := &call{s: s, w: w, r: r, path: vars, tok: tok}
	if rt.raw {
		c.p = params{v: r.URL.Query()}
	} else if c.p, err = readParams(r); err != nil {
		writeErr(w, err)
		return
	}
	if node, ok := vars["node"]; ok {
		if err := s.checkNodeReachable(node); err != nil {
			writeErr(w, err)
			return
		}
	}
	data, err := rt.h(c)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeData(w, data)
}

func (s *Server) unhandledCall(r *http.Request) {
	s.mu.Lock()
	fn := s.unhandled
	s.mu.Unlock()
	if fn != nil {
		fn(r.Method, r.URL.Path)
	}
}

// OnUnhandled sets a callback for requests no route serves (tests fail on
// it: an unsimulated endpoint means the lab is missing something talosc
// uses).
func (s *Server) OnUnhandled(fn func(method, path string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unhandled = fn
}

// checkNodeReachable answers like pveproxy for a node in the path: unknown
// nodes fail, offline nodes cannot be proxied to.
func (s *Server) checkNodeReachable(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[name]
	if n == nil {
		return fail("no such cluster node '%s'", name)
	}
	if n.Offline {
		return &apiError{status: statusNodeUnreachable, message: "No route to host"}
	}
	return nil
}

// statusNodeUnreachable is pveproxy's pseudo-status for a node it cannot
// proxy to.
const statusNodeUnreachable = 595
