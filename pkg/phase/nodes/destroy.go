package nodes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/state"
)

// Destroy deletes every owned machine, waits until they are gone, and
// lists them again: its outputs name the owned machines left (none after
// a destroy that did its work; every one in a dry run). A machine still
// listed fails the phase, so the front door keeps the cluster's identity.
func (Phase) Destroy(ctx context.Context, in *phase.Input, sec *state.Section) error {
	cloud, inv, err := in.Inventory(ctx)
	if err != nil {
		return err
	}
	// A network that could not be torn down is refused before any machine
	// goes (reference §3.3).
	if err := cloud.ValidateTeardown(ctx); err != nil {
		return err
	}
	plan := in.NewPlan()
	err = cloud.DestroyMachines(ctx, inv, plan)
	sec.Plan = plan.Changes()
	if err != nil {
		return errors.Join(err, sec.SetOutputs(sections.Nodes{Provider: in.Config.Provider(), Machines: inv.Machines}))
	}
	left := inv // a dry run removed nothing
	if err := plan.Verify(ctx, func(ctx context.Context) (err error) {
		if left, err = cloud.Inventory(ctx); err != nil {
			return fmt.Errorf("list the owned machines again after the teardown: %w", err)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := sec.SetOutputs(sections.Nodes{Provider: in.Config.Provider(), Machines: left.Machines}); err != nil {
		return err
	}
	return plan.Verify(ctx, func(context.Context) error {
		if len(left.Machines) > 0 {
			return fmt.Errorf("%d owned machine(s) still listed after the teardown: %s", len(left.Machines), strings.Join(left.Hostnames(), ", "))
		}
		return nil
	})
}
