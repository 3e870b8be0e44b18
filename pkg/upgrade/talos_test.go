package upgrade_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/upgrade"
)

func TestNeedsTalosUpgrade(t *testing.T) {
	t.Parallel()
	const (
		base  = "376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba"
		iscsi = "613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245"
	)
	for _, tc := range []struct {
		name                    string
		running, pinned         string
		runSchematic, schematic string
		want                    bool
		reason                  string
		err                     string
	}{
		{"equal", "v1.14.1", "v1.14.1", base, base, false, "", ""},
		{"equal without the v", "1.14.1", "v1.14.1", base, base, false, "", ""},
		{"version only", "v1.13.8", "v1.14.1", base, base, true, "Talos v1.13.8 → v1.14.1", ""},
		{"patch only", "v1.14.0", "v1.14.1", base, base, true, "Talos v1.14.0 → v1.14.1", ""},
		{"schematic only", "v1.14.1", "v1.14.1", base, iscsi, true, "schematic 376567988ad3… → 613e1592b2da…", ""},
		{"both", "v1.13.8", "v1.14.1", iscsi, base, true, "Talos v1.13.8 → v1.14.1, schematic 613e1592b2da… → 376567988ad3…", ""},
		{"a node without a schematic", "v1.14.1", "v1.14.1", "", base, true, "schematic none → 376567988ad3…", ""},
		{"prerelease to its release", "v1.14.0-beta.1", "v1.14.0", base, base, true, "Talos v1.14.0-beta.1 → v1.14.0", ""},
		{"release back to its prerelease", "v1.14.0", "v1.14.0-beta.1", base, base, false, "", "talos.version v1.14.0-beta.1 is older than the running v1.14.0; talos downgrades are not supported"},
		{"downgrade", "v1.14.1", "v1.13.8", base, iscsi, false, "", "talos.version v1.13.8 is older than the running v1.14.1; talos downgrades are not supported"},
		{"unparsable running version", "", "v1.14.1", base, base, false, "", "running talos version"},
		{"unparsable pin", "v1.14.1", "latest", base, base, false, "", "talos.version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, reason, err := upgrade.NeedsTalosUpgrade(tc.running, tc.pinned, tc.runSchematic, tc.schematic)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || got {
					t.Fatalf("NeedsTalosUpgrade = %v, %q, %v; want an error containing %q", got, reason, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || reason != tc.reason {
				t.Fatalf("NeedsTalosUpgrade = %v, %q, %v; want %v, %q", got, reason, err, tc.want, tc.reason)
			}
		})
	}
	if _, _, err := upgrade.NeedsTalosUpgrade("v1.14.1", "v1.13.8", "", ""); !errors.As(err, new(*upgrade.DowngradeError)) {
		t.Errorf("a downgrade is %T, want *upgrade.DowngradeError", err)
	}
}
