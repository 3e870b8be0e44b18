package bridge

import (
	"net/netip"
	"testing"
)

// TestBridgeAddresses: leases and static addresses share one book: a lease
// skips static addresses, a static address another VM holds is refused, a
// VM keeps its lease across starts and a released address is leased again.
func TestBridgeAddresses(t *testing.T) {
	t.Parallel()
	b := New(netip.MustParsePrefix("127.20.0.0/24"))
	attach := func(vmid int, static string, want string) {
		t.Helper()
		var s netip.Prefix
		if static != "" {
			s = netip.MustParsePrefix(static)
		}
		got, err := b.Attach(vmid, s)
		switch {
		case want == "" && err == nil:
			t.Fatalf("VM %d static %s: got %s, want an error", vmid, static, got)
		case want != "" && (err != nil || got != netip.MustParsePrefix(want)):
			t.Fatalf("VM %d static %s: got %s, %v; want %s", vmid, static, got, err, want)
		}
	}
	attach(101, "", "127.20.0.11/24")
	attach(102, "127.20.0.11/24", "")
	attach(102, "127.20.0.12/24", "127.20.0.12/24")
	attach(103, "", "127.20.0.13/24")
	attach(101, "", "127.20.0.11/24")
	if a, ok := b.Release(101); !ok || a != netip.MustParseAddr("127.20.0.11") {
		t.Fatalf("release 101 = %s, %v", a, ok)
	}
	attach(104, "", "127.20.0.11/24")
}
