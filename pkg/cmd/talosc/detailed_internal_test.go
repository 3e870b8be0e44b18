package talosc

import (
	"errors"
	"testing"

	"github.com/talosc/talosc/pkg/cli"
)

// TestDetailedExit: changes pending are 3 whatever else; no change is 0
// only when every section could look.
func TestDetailedExit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		changes    int
		incomplete []string
		want       int
	}{
		{"nothing to do", 0, nil, cli.ExitOK},
		{"changes", 4, nil, cli.ExitChanges},
		{"changes, a plugin deferred", 4, []string{"argocd deferred"}, cli.ExitChanges},
		{"no change found, a plugin deferred", 0, []string{"argocd deferred"}, cli.ExitFailure},
	} {
		err := detailedExit(tc.changes, tc.incomplete)
		code := cli.ExitOK
		if ee, ok := errors.AsType[*cli.ExitError](err); ok {
			code = ee.Code
		}
		if code != tc.want {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, code, err, tc.want)
		}
	}
}
