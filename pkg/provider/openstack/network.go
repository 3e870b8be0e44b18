package openstack

import (
	"context"
	"errors"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
)

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
