package openstack

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
)

// A server's kind is KindServer, and it is stopped exactly when Nova
// reports SHUTOFF: the nodes phase restarts it without reading a boot id.
func TestMachineOf_KindAndPowerState(t *testing.T) {
	t.Parallel()
	for status, stopped := range map[string]bool{"ACTIVE": false, "SHUTOFF": true, "shutoff": true, "ERROR": false, "BUILD": false} {
		m := machineOf(&servers.Server{Name: "c-worker-01", ID: "s1", Status: status}, "c")
		if m.Kind != KindServer || m.Stopped != stopped || m.Status != status {
			t.Errorf("status %s: kind %q, stopped %t; want %q, %t", status, m.Kind, m.Stopped, KindServer, stopped)
		}
	}
}
