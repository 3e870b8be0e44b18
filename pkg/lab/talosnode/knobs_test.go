package talosnode_test

import (
	"encoding/json"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// TestKnobsJSON: rebootDown travels as a Go duration string; nanoseconds
// are read too; anything else is an error.
func TestKnobsJSON(t *testing.T) {
	t.Parallel()
	k := talosnode.Knobs{NeverLeavesEtcd: true, RebootDown: 90 * time.Second}
	data, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"neverLeavesEtcd":true,"rebootDown":"1m30s"}`; string(data) != want {
		t.Fatalf("marshal = %s, want %s", data, want)
	}
	for in, want := range map[string]talosnode.Knobs{
		`{"neverLeavesEtcd":true,"rebootDown":"1m30s"}`:              k,
		`{"rebootDown":5000000000}`:                                  {RebootDown: 5 * time.Second},
		`{"neverBoots":true}`:                                        {NeverBoots: true},
		`{"resetHangs":true,"rebootHangs":true,"drainBlocked":true}`: {ResetHangs: true, RebootHangs: true, DrainBlocked: true},
		`{"installFails":"no space left","bootsOldVersion":true}`:    {InstallFails: "no space left", BootsOldVersion: true},
		`{"losesRestoreAtReboot":true}`:                              {LosesRestoreAtReboot: true},
	} {
		var got talosnode.Knobs
		if err := json.Unmarshal([]byte(in), &got); err != nil || got != want {
			t.Errorf("unmarshal %s = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{`{"rebootDown":"soon"}`, `{"rebootDown":true}`, `{"neverBoots":"yes"}`} {
		var got talosnode.Knobs
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("unmarshal %s = %+v, want an error", in, got)
		}
	}
}

// TestNodeStatusVIPs: a control plane reports the Layer 2 VIP of its
// config, a worker none; neither config has a static address (DHCP).
func TestNodeStatusVIPs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1), worker)
	if got := l.nodes[cp(1)].Status().VIPs; !slices.Equal(got, []netip.Addr{fx.vip}) {
		t.Errorf("control plane VIPs = %v, want [%s]", got, fx.vip)
	}
	if got := l.nodes[worker].Status().VIPs; len(got) != 0 {
		t.Errorf("worker VIPs = %v, want none", got)
	}
	for _, h := range []string{cp(1), worker} {
		if addrs, err := talosnode.StaticAddresses(fx.configs[h]); err != nil || len(addrs) != 0 {
			t.Errorf("static addresses of %s = %v, %v; want none", h, addrs, err)
		}
	}
}
