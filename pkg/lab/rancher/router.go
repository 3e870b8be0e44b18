package rancher

import (
	"encoding/json"
	"errors"
	"net/http"
)

// call is one request being served.
type call struct {
	s *Server
	w http.ResponseWriter
	r *http.Request
}

// handler serves one route, as the Proxmox and OpenStack labs' do: it
// returns the body to answer 200 with (a reply or plain for anything
// else), or an error (a *normanError for norman's error body; anything
// else is a 500).
type handler func(c *call) (any, error)

// reply is a JSON answer other than 200.
type reply struct {
	status int
	body   any
}

// created answers 201 with body.
func created(body any) reply { return reply{status: http.StatusCreated, body: body} }

// plain is a text/plain answer (the import manifest).
type plain struct {
	status int
	text   string
}

// normanError is a failed call, answered with norman's error body.
type normanError struct {
	status           int
	code, msg, field string
}

func (e *normanError) Error() string { return e.code + ": " + e.msg }

// norman is a norman error; field, when given, is its fieldName.
func norman(status int, code, msg string, field ...string) *normanError {
	e := &normanError{status: status, code: code, msg: msg}
	if len(field) > 0 {
		e.field = field[0]
	}
	return e
}

func notFound(resource, id string) *normanError {
	return norman(http.StatusNotFound, "NotFound", resource+` "`+id+`" not found`)
}

// handle serves h: Rancher's envelope, chosen here once.
func (s *Server) handle(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := h(&call{s: s, w: w, r: r})
		if err != nil {
			var ne *normanError
			if !errors.As(err, &ne) {
				ne = norman(http.StatusInternalServerError, "ServerError", err.Error())
			}
			ne.write(w)
			return
		}
		switch b := body.(type) {
		case plain:
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(b.status)
			_, _ = w.Write([]byte(b.text))
		case reply:
			writeJSON(w, b.status, b.body)
		default:
			writeJSON(w, http.StatusOK, body)
		}
	}
}

// write writes e as norman's error body.
func (e *normanError) write(w http.ResponseWriter) {
	body := map[string]any{"type": "error", "baseType": "error", "status": e.status, "code": e.code, "message": e.msg}
	if e.field != "" {
		body["fieldName"] = e.field
	}
	writeJSON(w, e.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode decodes the request body into v, or fails as norman does.
func (c *call) decode(v any) error {
	if err := json.NewDecoder(http.MaxBytesReader(c.w, c.r.Body, 1<<20)).Decode(v); err != nil {
		return norman(http.StatusUnprocessableEntity, "InvalidBodyContent", "Failed to parse body: "+err.Error())
	}
	return nil
}
