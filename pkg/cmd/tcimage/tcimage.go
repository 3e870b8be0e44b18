// Package tcimage is the tc-image binary: the boot-image phase.
package tcimage

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
)

// Desired is the boot image the phase ensures exists.
type Desired struct {
	TalosVersion string `json:"talosVersion"`
}

// NewCommand returns the tc-image root command. runF replaces the run in tests.
func NewCommand(s cli.Streams, runF func(context.Context, *phase.Options, string) error) *cobra.Command {
	return phase.NewCommand(s, &phase.Model{
		PhaseName: phase.Image,
		Desired:   func(c *config.Cluster) any { return Desired{TalosVersion: c.Talos.Version} },
		Unknown:   []string{"bootImage"},
	}, runF)
}
