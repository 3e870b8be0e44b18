package naming_test

import (
	"net/netip"
	"regexp"
	"testing"

	"github.com/talosc/talosc/pkg/talos/naming"
)

func TestMACAndAnchor(t *testing.T) {
	t.Parallel()
	mac := regexp.MustCompile(`^02(:[0-9a-f]{2}){5}$`)
	a, b := naming.MAC("lab", "lab-worker-01", 0), naming.MAC("lab", "lab-worker-01", 1)
	if !mac.MatchString(a) || !mac.MatchString(b) || a == b || a != naming.MAC("lab", "lab-worker-01", 0) {
		t.Errorf("MAC = %s, %s; want stable, distinct, locally administered", a, b)
	}
	if got := naming.MAC("demo", "demo-controlplane-01", 0); got != "02:73:d6:fa:93:d7" {
		t.Errorf("MAC(demo, demo-controlplane-01, 0) = %s, want 02:73:d6:fa:93:d7 (02 + sha256(\"demo/demo-controlplane-01/0\")[:5])", got)
	}
	for _, cidr := range []string{"169.254.32.0/20", "169.254.0.0/30", "169.254.7.7/32"} {
		p := netip.MustParsePrefix(cidr)
		for _, h := range []string{"x-controlplane-01", "x-worker-01", "x-worker-02"} {
			got, err := naming.Anchor("x", h, p)
			if err != nil {
				t.Fatal(err)
			}
			addr := got.Addr()
			if got.Bits() != 32 || !p.Contains(addr) {
				t.Errorf("Anchor(%s, %s) = %s, want a /32 inside", h, cidr, got)
			}
			if p.Bits() < 31 && (addr == p.Masked().Addr() || !p.Contains(addr.Next())) {
				t.Errorf("Anchor(%s, %s) = %s is the network or broadcast address", h, cidr, got)
			}
		}
	}
	if _, err := naming.Anchor("x", "h", netip.Prefix{}); err == nil {
		t.Errorf("Anchor with no anchor_cidr succeeded")
	}
}
