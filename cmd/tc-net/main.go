// Command tc-net runs the net phase of a talosc run as a Unix filter.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcnet"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(tcnet.NewCommand(s, nil), os.Args[1:], s))
}
