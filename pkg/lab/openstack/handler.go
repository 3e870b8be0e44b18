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

// created answers 201 with body.
func created(body any) reply { return reply{status: http.StatusCreated, body: body} }

// noContent answers 204.
func noContent() reply { return reply{status: http.StatusNoContent} }

// The services' envelopes, chosen here once: each wraps its handlers in
// token validation and writes their errors in its own body.

func (s *Cloud) neutron(h handler) http.HandlerFunc { return s.serve(neutronError, h) }

// serve validates the token, runs h and writes its answer; errors go
// through writeErr, the service's error body.
func (s *Cloud) serve(writeErr func(http.ResponseWriter, *apiError), h handler) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, t *token) {
		body, err := h(&call{s: s, w: w, r: r, t: t})
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = errf(http.StatusInternalServerError, "HTTPInternalServerError", "%v", err)
			}
			writeErr(w, ae)
			return
		}
		rp, ok := body.(reply)
		if !ok {
			rp = reply{status: http.StatusOK, body: body}
		}
		if rp.body == nil {
			w.WriteHeader(rp.status)
			return
		}
		writeJSON(w, rp.status, rp.body)
	})
}
