// Command tc-image runs the image phase of a talosc run as a Unix filter.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcimage"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(tcimage.NewCommand(s, nil), os.Args[1:], s))
}
