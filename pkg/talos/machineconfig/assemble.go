package machineconfig

import (
	"fmt"
	"net/netip"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/talos/factory"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// Installers resolves every pool's installer image at the cluster's Image
// Factory (talos.image_factory: the registry host of the installer
// references).
func Installers(cfg *config.Cluster) (*factory.InstallerPlan, error) {
	host, err := factory.RegistryHost(cfg.ImageFactoryURL())
	if err != nil {
		return nil, fmt.Errorf("image factory %s (talos.image_factory): %w", cfg.ImageFactoryURL(), err)
	}
	platform, err := factory.PlatformFor(cfg.Provider())
	if err != nil {
		return nil, err
	}
	return factory.Installers(cfg, factory.InstallerOptions{Host: host, Platform: platform})
}

// API is where the cluster's Kubernetes API is reached: the advertised
// address clients use and the control planes' VIP (Input's
// AdvertisedAddress and VIP).
type API struct {
	Advertised string
	VIP        netip.Addr
}

// Assemble is the generation input every node of the cluster shares: the
// one place it is put together, for the nodes phase and `tc-nodes configs`
// alike. It resolves the installers (Installers) and returns their plan
// beside the input; project is the OpenStack credential's project name
// ("" when unknown).
func Assemble(cfg *config.Cluster, id *identity.Identity, api API, project string) (Input, *factory.InstallerPlan, error) {
	installers, err := Installers(cfg)
	if err != nil {
		return Input{}, nil, err
	}
	in := Input{
		Cluster:           cfg,
		Secrets:           id.Bundle(),
		AdvertisedAddress: api.Advertised,
		VIP:               api.VIP,
		Installers:        installers.ByPool,
		OpenStackProject:  project,
	}
	if pass, ok := id.DiskEncryptionPassphrase(); ok {
		in.DiskEncryptionPassphrase = config.Secret(pass)
	}
	return in, installers, nil
}
