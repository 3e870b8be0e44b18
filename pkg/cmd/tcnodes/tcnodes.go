// Package tcnodes is the tc-nodes binary: identity, machines, Talos
// configuration, bootstrap, kubeconfig and health.
package tcnodes

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/nodes"
	"github.com/talosc/talosc/pkg/phase/preflight"
	"github.com/talosc/talosc/pkg/provider/clouds"
)

// NewCommand returns the tc-nodes root command. runF replaces the run in tests.
func NewCommand(s cli.Streams, runF func(context.Context, *phase.Options, string) error) *cobra.Command {
	root := phase.NewCommand(s, preflight.WithValidation(nodes.Phase{}), clouds.All(), runF)
	root.AddCommand(newConfigsCommand(s, nil))
	return root
}
