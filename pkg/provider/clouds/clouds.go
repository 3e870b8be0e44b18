// Package clouds is the list of providers the phase binaries (tc-image,
// tc-net, tc-nodes) link. It is the one product package that imports
// every provider: the runner (pkg/phase) takes its connectors from the
// binary, so the front door and the plugins, which import the runner
// for its names and sections, link no cloud SDK.
package clouds

import (
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/provider/openstack"
	"github.com/talosc/talosc/pkg/provider/proxmox"
)

// All returns a connector for every provider talosc drives.
func All() provider.Connectors {
	return provider.Connectors{
		config.ProviderOpenStack: openstack.Connector,
		config.ProviderProxmox:   proxmox.Connector,
	}
}
