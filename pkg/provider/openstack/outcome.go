package openstack

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"

	"github.com/talosc/talosc/pkg/provider"
)

// maybeApplied reports an error after which a create may have happened
// (see provider.OutcomeUnknown).
func maybeApplied(err error) bool {
	if code, ok := errors.AsType[gophercloud.ErrUnexpectedResponseCode](err); ok {
		return provider.OutcomeUnknown(code.Actual, err)
	}
	return provider.OutcomeUnknown(0, err)
}

// replayable reports the requests of a non-idempotent method that are
// safe to repeat on OpenStack: Keystone's token POST (a second token is
// harmless) and Glance's image PATCH (talosc's patches set fixed values).
func replayable(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost:
		return strings.HasSuffix(r.URL.Path, "/auth/tokens")
	case http.MethodPatch:
		return strings.Contains(r.URL.Path, "/v2/images/")
	}
	return false
}
