package proxmox_test

import (
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/provider"
)

// A pool of the cluster's name that talosc did not make (its comment is
// not talosc's marker, "managed-by=taloscluster cluster=<name>") is never
// adopted, changed or deleted, even when it holds a VM carrying the
// cluster's tags and name: the inventory, a create, a machine delete and
// a destroy all refuse it, naming the marker, and nothing is written.
func TestPool_ForeignSameNamedPoolIsNeverAdoptedChangedOrDeleted(t *testing.T) {
	t.Parallel()
	l := newLab(t, twoNodes(), nil, labCluster{})
	specs := l.machineSpecs(t)
	l.post(t, "/pools", map[string]any{"poolid": "taloscluster-c", "comment": "team b's pool"})
	l.post(t, "/nodes/pve1/qemu", map[string]any{"vmid": 900, "name": "c-controlplane-01", "pool": "taloscluster-c", "tags": "taloscluster;cluster_c;role_controlplane;pool_controlplane"})
	l.srv.Recorder().Reset()
	const refusal = `refusing to adopt the Proxmox pool taloscluster-c: its comment is "team b's pool", not "managed-by=taloscluster cluster=c", so talosc does not own it`
	stale := provider.Machine{Hostname: "c-controlplane-01", ID: "900", Zone: "pve1", Role: "controlplane", Pool: "controlplane"}
	for name, run := range map[string]func() error{
		"inventory": func() error { _, err := l.cloud.Inventory(t.Context()); return err },
		"create": func() error {
			_, err := l.cloud.CreateMachines(t.Context(), specs, &provider.Plan{})
			return err
		},
		"delete": func() error { return l.cloud.DeleteMachine(t.Context(), stale, &provider.Plan{}) },
		"destroy": func() error {
			return l.cloud.DestroyMachines(t.Context(), &provider.Inventory{}, &provider.Plan{})
		},
	} {
		if err := run(); err == nil || !strings.Contains(err.Error(), refusal) {
			t.Errorf("%s: %v, want %q", name, err, refusal)
		}
	}
	l.noMutations(t)
	if vms := l.srv.VMs(); len(vms) != 1 || vms[0].VMID != 900 || vms[0].Pool != "taloscluster-c" {
		t.Errorf("lab VMs %+v, want VM 900 in the foreign pool, untouched", vms)
	}
}
