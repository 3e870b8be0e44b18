package proxmox

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiError is a failed API call, answered the way pveproxy answers it: the
// status code, a JSON envelope with "data": null, the message (PVE puts its
// first line in the HTTP reason phrase, which Go's server cannot set, so
// the lab carries it in "message" as PVE's newer formatter does) and, for
// parameter errors, the per-parameter "errors" map.
type apiError struct {
	status  int
	message string
	errors  map[string]string
}

func (e *apiError) Error() string {
	var b strings.Builder
	b.WriteString(e.message)
	for _, k := range sortedKeys(e.errors) {
		b.WriteString("\n" + k + ": " + e.errors[k])
	}
	return b.String()
}

// fail is a plain "die" in a PVE API handler: HTTP 500 with the message.
func fail(format string, args ...any) *apiError {
	return &apiError{status: http.StatusInternalServerError, message: fmt.Sprintf(format, args...)}
}

// checkDigest fails as PVE does when the request carries a digest that is
// not current's (the configuration changed since the client read it).
func (c *call) checkDigest(current string) error {
	if d := c.p.str("digest"); d != "" && d != current {
		return fail("detected modified configuration - file changed by other user? Try again.")
	}
	return nil
}

// paramErr is raise_param_exc: HTTP 400 "Parameter verification failed."
// with the per-parameter messages.
func paramErr(errs map[string]string) *apiError {
	return &apiError{status: http.StatusBadRequest, message: "Parameter verification failed.", errors: errs}
}

// paramErr1 is paramErr for one parameter.
func paramErr1(key, format string, args ...any) *apiError {
	return paramErr(map[string]string{key: fmt.Sprintf(format, args...)})
}

// forbidden is PVE's failed permission check.
func forbidden(path string, privs ...string) *apiError {
	return &apiError{status: http.StatusForbidden, message: fmt.Sprintf("Permission check failed (%s, %s)", path, strings.Join(privs, "|"))}
}

// configMissing is what qemu-server answers for a VMID that has no config on
// the node in the path.
func configMissing(node string, vmid int) *apiError {
	return fail("Configuration file 'nodes/%s/qemu-server/%d.conf' does not exist", node, vmid)
}

// writeData writes a successful {"data": v} envelope.
func writeData(w http.ResponseWriter, v any) {
	writeJSON(w, http.StatusOK, map[string]any{"data": v})
}

// writeErr writes err; anything but an *apiError is an internal error.
func writeErr(w http.ResponseWriter, err error) {
	ae, ok := err.(*apiError) //nolint:errorlint // handlers return *apiError unwrapped by construction
	if !ok {
		ae = fail("%v", err)
	}
	body := map[string]any{"data": nil}
	if ae.message != "" {
		body["message"] = ae.message + "\n"
	}
	if len(ae.errors) > 0 {
		body["errors"] = ae.errors
	}
	writeJSON(w, ae.status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Cache-Control", "max-age=0")
	w.Header().Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
