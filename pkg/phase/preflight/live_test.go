package preflight

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

// TestCheckTailscale is I-T1/I-T2 decided from talosconfig's endpoint.
func TestCheckTailscale(t *testing.T) {
	t.Parallel()
	keyed := &config.Tailscale{AuthKey: "tskey-auth-abc"}
	keyless := &config.Tailscale{}
	for _, tc := range []struct {
		name     string
		live     live
		ts       *config.Tailscale
		refusing string
	}{
		{"not up: nothing live to protect", live{endpoint: "127.0.0.11"}, keyed, ""},
		{"no recorded endpoint: skipped", live{up: true}, keyed, ""},
		{"adding a key to a live keyless cluster", live{up: true, endpoint: "127.0.0.11"}, keyed, "cluster.yaml now gives tailscale.auth_key"},
		{"removing the key of a joined cluster", live{up: true, endpoint: "demo-controlplane-01"}, keyless, "no longer gives tailscale.auth_key"},
		{"removing the section of a joined cluster", live{up: true, endpoint: "demo-controlplane-01"}, nil, "no longer gives tailscale.auth_key"},
		{"adding a keyless section is allowed", live{up: true, endpoint: "127.0.0.11"}, keyless, ""},
		{"keeping the key", live{up: true, endpoint: "demo-controlplane-01"}, keyed, ""},
		{"the scaffold placeholder is no key", live{up: true, endpoint: "127.0.0.11"}, &config.Tailscale{AuthKey: config.PlaceholderSecret}, ""},
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
