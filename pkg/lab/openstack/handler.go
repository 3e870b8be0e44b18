package openstack

import (
	"errors"
	"net/http"
)

// call is one authenticated request being served.
type call struct {
	s *Cloud
	w http.ResponseWriter
	r *http.Request
	t *token
	// mv is the microversion's minor number (Nova 2.x, Cinder 3.x).
	mv int
}

// handler serves one route, as the Proxmox lab's do: it returns the body to
// answer 200 with (a reply for another status), or an error (an *apiError
// for the service's own error body; anything else is a 500).
type handler func(c *call) (any, error)

// reply is an answer other than 200: its status and JSON body (nil: none,
// and no Content-Type either).
type reply struct {
	status int
	body   any
}

// written is the answer of a handler that wrote its response itself
// (Swift's objects and plain listings).
type written struct{}

// created answers 201 with body.
func created(body any) reply { return reply{status: http.StatusCreated, body: body} }

// noContent answers 204.
func noContent() reply { return reply{status: http.StatusNoContent} }

// dialect is how one service answers.
type dialect struct {
	// writeErr writes an error in the service's own body.
	writeErr func(http.ResponseWriter, *apiError)
	// check, when set, vets every call before its handler runs
	// (microversions, the project in the path).
	check func(c *call) *apiError
}

// The services' envelopes, chosen here once: each wraps its handlers in
// token validation and writes their errors in its own body.

func (s *Cloud) keystone(h handler) http.HandlerFunc { return s.serve(keystoneDialect(), h) }

// keystoneOpen serves h without a token (the call that issues one).
func (s *Cloud) keystoneOpen(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { answer(keystoneDialect(), &call{s: s, w: w, r: r}, h) }
}

func keystoneDialect() dialect { return dialect{writeErr: keystoneError} }

func (s *Cloud) nova(h handler) http.HandlerFunc {
	return s.serve(dialect{writeErr: novaError, check: novaCheck}, h)
}

func (s *Cloud) neutron(h handler) http.HandlerFunc {
	return s.serve(dialect{writeErr: neutronError}, h)
}

func (s *Cloud) glance(h handler) http.HandlerFunc {
	return s.serve(dialect{writeErr: glanceError}, h)
}

func (s *Cloud) cinder(h handler) http.HandlerFunc {
	return s.serve(dialect{writeErr: cinderError, check: cinderCheck}, h)
}

// serve validates the token, then answers with h in d's dialect.
func (s *Cloud) serve(d dialect, h handler) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, t *token) {
		answer(d, &call{s: s, w: w, r: r, t: t}, h)
	})
}

// answer runs d's check and h, and writes h's answer or the error in d's
// body.
func answer(d dialect, c *call, h handler) {
	if d.check != nil {
		if e := d.check(c); e != nil {
			d.writeErr(c.w, e)
			return
		}
	}
	body, err := h(c)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = errf(http.StatusInternalServerError, "HTTPInternalServerError", "%v", err)
		}
		d.writeErr(c.w, ae)
		return
	}
	if _, ok := body.(written); ok {
		return
	}
	rp, ok := body.(reply)
	if !ok {
		rp = reply{status: http.StatusOK, body: body}
	}
	if rp.body == nil {
		c.w.WriteHeader(rp.status)
		return
	}
	writeJSON(c.w, rp.status, rp.body)
}
