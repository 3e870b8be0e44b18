package proxmox

import (
	"context"
	"errors"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

// EnsureImage is provider.Images.EnsureImage.
func (c *Cloud) EnsureImage(ctx context.Context, spec provider.ImageSpec, plan *provider.Plan) (provider.Image, error) {
	return provider.Image{}, errors.New("TODO image")
}

// FindImage is provider.Images.FindImage.
func (c *Cloud) FindImage(ctx context.Context, spec provider.ImageSpec) (provider.Image, bool, error) {
	return provider.Image{}, false, errors.New("TODO image")
}

// ReconcileNetwork is provider.Networks.ReconcileNetwork.
func (c *Cloud) ReconcileNetwork(ctx context.Context, spec provider.NetworkSpec, plan *provider.Plan) (*provider.NetworkResult, error) {
	return nil, errors.New("TODO network")
}

// CurrentNetwork is provider.Networks.CurrentNetwork.
func (c *Cloud) CurrentNetwork(ctx context.Context, spec provider.NetworkSpec) (*provider.NetworkResult, error) {
	return nil, errors.New("TODO network")
}

// DestroyNetwork is provider.Networks.DestroyNetwork.
func (c *Cloud) DestroyNetwork(ctx context.Context, cluster *config.Cluster, plan *provider.Plan) error {
	return errors.New("TODO network")
}

// Status is provider.Cloud.Status.
func (c *Cloud) Status(ctx context.Context, cluster *config.Cluster) (*provider.Status, error) {
	return nil, errors.New("TODO status")
}
