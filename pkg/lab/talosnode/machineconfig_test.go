package talosnode_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/api/machine"
	"github.com/siderolabs/talos/pkg/machinery/client"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
	"github.com/siderolabs/talos/pkg/machinery/role"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosc/talosc/pkg/lab/talosnode"
)

// activeConfig is the node's MachineConfig "v1alpha1" resource, as bytes.
func activeConfig(t *testing.T, c *client.Client) ([]byte, error) {
	t.Helper()
	mc, err := safe.StateGetByID[*configres.MachineConfig](ctx(t, 2*time.Second), c.COSI, configres.ActiveID)
	if err != nil {
		return nil, err
	}
	return mc.Provider().Bytes()
}

// TestMachineConfigResource: a node serves the configuration it booted
// with, then the one applied to it, to admins only.
func TestMachineConfigResource(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, talos114)
	l := newLab(t, fx, talosnode.Options{})
	l.boot(cp(1))
	c := l.client(cp(1))

	got, err := activeConfig(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, fx.configs[cp(1)]) {
		t.Errorf("MachineConfig after boot is not the delivered config:\n%s", got)
	}

	next := patched(t, fx.configs[cp(1)], sysctlPatch)
	if _, err := apply(t, c, next, machine.ApplyConfigurationRequest_AUTO, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the applied config to be the active one", func() bool {
		got, err := activeConfig(t, c)
		return err == nil && bytes.Equal(got, next)
	})

	if _, err := activeConfig(t, l.clientAs(cp(1), role.Reader, role.Operator)); status.Code(err) != codes.PermissionDenied {
		t.Errorf("MachineConfig read without os:admin: %v, want PermissionDenied", err)
	}
}
