package proxmox

import (
	"testing"

	"github.com/talosc/talosc/pkg/config"
)

// A VM's kind is KindVM, and it is stopped exactly when Proxmox reports
// "stopped": the nodes phase restarts it without reading a boot id.
func TestMachineOf_KindAndPowerState(t *testing.T) {
	t.Parallel()
	for status, stopped := range map[string]bool{"running": false, "stopped": true, "paused": false, "": false} {
		m := machineOf(vmResource{Type: "qemu", VMID: 100, Name: "c-worker-01", Status: status}, &config.Cluster{Name: "c"})
		if m.Kind != KindVM || m.Stopped != stopped || m.Status != status {
			t.Errorf("status %q: kind %q, stopped %t; want %q, %t", status, m.Kind, m.Stopped, KindVM, stopped)
		}
	}
}
