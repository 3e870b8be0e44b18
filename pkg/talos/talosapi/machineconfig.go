package talosapi

import (
	"context"
	"fmt"

	"github.com/cosi-project/runtime/pkg/safe"
	"github.com/siderolabs/talos/pkg/machinery/config/encoder"
	configres "github.com/siderolabs/talos/pkg/machinery/resources/config"
)

// MachineConfig returns the machine configuration node runs (the COSI
// resource MachineConfigs.config.talos.dev "v1alpha1" in namespace
// "config", what `talosctl get machineconfig` shows; a sensitive resource,
// so os:admin only). It is decoded by machinery and encoded again without
// comments, the way machineconfig.Config.Bytes encodes a generated
// configuration, so the two compare document by document and field by
// field whatever layout the node was given its configuration in.
//
// The result holds the cluster's secrets: diff it through configdiff,
// never print it.
func (c *Client) MachineConfig(ctx context.Context, node string) ([]byte, error) {
	var out []byte
	err := c.read(ctx, "Get MachineConfig", node, func(ctx context.Context) error {
		mc, err := safe.StateGetByID[*configres.MachineConfig](ctx, c.c.COSI, configres.ActiveID)
		if err != nil {
			return err
		}
		if out, err = mc.Provider().EncodeBytes(encoder.WithComments(encoder.CommentsDisabled)); err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		return nil
	})
	return out, err
}
