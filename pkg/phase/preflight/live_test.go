package preflight

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
)

// TestCheckTailscale is I-T1/I-T2 decided from talosconfig's endpoint.
func TestCheckTailscale(t *testing.T) {
	t.Parallel()
	keyed := &config.Tailscale{AuthKey: "tskey-auth-abc"}
	keyless := &config.Tailscale{}
	for _, tc := range []struct {
		name     string
		live     view
		ts       *config.Tailscale
		refusing string
	}{
		{"not up: nothing live to protect", view{endpoint: "127.0.0.11"}, keyed, ""},
		{"no recorded endpoint: skipped", view{up: true}, keyed, ""},
		{"adding a key to a live keyless cluster", view{up: true, endpoint: "127.0.0.11"}, keyed, "cluster.yaml now gives tailscale.auth_key"},
		{"removing the key of a joined cluster", view{up: true, endpoint: "demo-controlplane-01"}, keyless, "no longer gives tailscale.auth_key"},
		{"removing the section of a joined cluster", view{up: true, endpoint: "demo-controlplane-01"}, nil, "no longer gives tailscale.auth_key"},
		{"adding a keyless section is allowed", view{up: true, endpoint: "127.0.0.11"}, keyless, ""},
		{"keeping the key", view{up: true, endpoint: "demo-controlplane-01"}, keyed, ""},
		{"the scaffold placeholder is no key", view{up: true, endpoint: "127.0.0.11"}, &config.Tailscale{AuthKey: config.PlaceholderSecret}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.live.checkTailscale(&config.Cluster{Tailscale: tc.ts})
			switch {
			case tc.refusing == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusing != "" && (err == nil || !strings.Contains(err.Error(), tc.refusing) || !strings.Contains(err.Error(), "toggling tailscale on a live cluster")):
				t.Errorf("err = %v, want a refusal containing %q", err, tc.refusing)
			}
		})
	}
}

// TestConfirm is I-S2: a real run removes nothing unasked; --yes confirms
// any removal, --confirmed exactly the set it names, in any order.
func TestConfirm(t *testing.T) {
	t.Parallel()
	removals := []string{"demo-worker-02", "demo-worker-03"}
	for _, tc := range []struct {
		name  string
		in    phase.Input
		asked bool
	}{
		{"unconfirmed converge", phase.Input{}, true},
		{"a plan", phase.Input{DryRun: true}, false},
		{"--yes", phase.Input{Yes: true}, false},
		{"--confirmed, same set", phase.Input{Confirmed: []string{"demo-worker-03", "demo-worker-02"}}, false},
		{"--confirmed, a node fewer than now", phase.Input{Confirmed: []string{"demo-worker-02"}}, true},
	} {
		err := confirm(&tc.in, removals)
		ce, asked := errors.AsType[*phase.ConfirmError](err)
		if asked != tc.asked {
			t.Errorf("%s: err = %v, want asked %v", tc.name, err, tc.asked)
			continue
		}
		if asked && (!slices.Equal(ce.Names, removals) || !strings.Contains(ce.Prompt, "scale down will remove 2 node(s): demo-worker-02, demo-worker-03")) {
			t.Errorf("%s: %+v", tc.name, ce)
		}
	}
}
