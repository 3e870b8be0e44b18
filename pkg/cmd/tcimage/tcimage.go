// Package tcimage is the tc-image binary: the boot-image phase.
package tcimage

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/bootimage"
	"github.com/talosc/talosc/pkg/provider/clouds"
)

// NewCommand returns the tc-image root command. runF replaces the run in tests.
func NewCommand(s cli.Streams, runF func(context.Context, *phase.Options, string) error) *cobra.Command {
	return phase.NewCommand(s, bootimage.Phase{}, clouds.All(), runF)
}
