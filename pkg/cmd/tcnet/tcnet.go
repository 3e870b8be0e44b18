// Package tcnet is the tc-net binary: network, security and endpoints.
package tcnet

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/network"
	"github.com/talosc/talosc/pkg/provider/clouds"
)

// NewCommand returns the tc-net root command. runF replaces the run in tests.
func NewCommand(s cli.Streams, runF func(context.Context, *phase.Options, string) error) *cobra.Command {
	return phase.NewCommand(s, network.Phase{}, clouds.All(), runF)
}
