package proxmox

import (
	"context"
	"errors"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// Inventory is provider.Compute.Inventory.
func (c *Cloud) Inventory(ctx context.Context, cluster *config.Cluster) (*provider.Inventory, error) {
	return nil, errors.New("TODO compute")
}

// ValidateMachines is provider.Compute.ValidateMachines.
func (c *Cloud) ValidateMachines(ctx context.Context, cluster *config.Cluster, desired []config.Machine, inv *provider.Inventory) error {
	return errors.New("TODO compute")
}

// CreateMachines is provider.Compute.CreateMachines.
func (c *Cloud) CreateMachines(ctx context.Context, cluster *config.Cluster, specs []provider.MachineSpec, plan *provider.Plan) ([]provider.Machine, error) {
	return nil, errors.New("TODO compute")
}

// ReconcileMachines is provider.Compute.ReconcileMachines.
func (c *Cloud) ReconcileMachines(ctx context.Context, cluster *config.Cluster, inv *provider.Inventory, plan *provider.Plan) error {
	return errors.New("TODO compute")
}

// FinalizeMachines is provider.Compute.FinalizeMachines.
func (c *Cloud) FinalizeMachines(ctx context.Context, cluster *config.Cluster, inv *provider.Inventory, plan *provider.Plan) error {
	return errors.New("TODO compute")
}

// DestroyMachines is provider.Compute.DestroyMachines.
func (c *Cloud) DestroyMachines(ctx context.Context, cluster *config.Cluster, inv *provider.Inventory, plan *provider.Plan) error {
	return errors.New("TODO compute")
}
