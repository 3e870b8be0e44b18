// Package tcnet is the tc-net binary: network, security and endpoints.
package tcnet

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
)

// Desired is the network the phase ensures exists.
type Desired struct {
	ClusterCIDR string `json:"clusterCIDR"`
	MTU         int    `json:"mtu"`
}

// NewCommand returns the tc-net root command. runF replaces the run in tests.
func NewCommand(s cli.Streams, runF func(context.Context, *phase.Options, string) error) *cobra.Command {
	return phase.NewCommand(s, &phase.Model{
		PhaseName: phase.Net,
		Desired: func(c *config.Cluster) any {
			return Desired{ClusterCIDR: c.Network.Cluster.CIDR.String(), MTU: c.Network.Cluster.MTU}
		},
		Unknown: []string{"endpoints"},
	}, runF)
}
