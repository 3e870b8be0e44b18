package openstack

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

// DestroyMachines is provider.Compute.DestroyMachines.
func (c *Cloud) DestroyMachines(ctx context.Context, cluster *config.Cluster, inv *provider.Inventory, plan *provider.Plan) error {
	return errors.New("TODO compute")
}

// EnsureImage is provider.Images.EnsureImage.
func (c *Cloud) EnsureImage(ctx context.Context, spec provider.ImageSpec, plan *provider.Plan) (provider.Image, error) {
	return provider.Image{}, errors.New("TODO image")
}

// FindImage is provider.Images.FindImage.
func (c *Cloud) FindImage(ctx context.Context, spec provider.ImageSpec) (provider.Image, bool, error) {
	return provider.Image{}, false, errors.New("TODO image")
}

// Status is provider.Cloud.Status.
func (c *Cloud) Status(ctx context.Context, cluster *config.Cluster) (*provider.Status, error) {
	return nil, errors.New("TODO status")
}
