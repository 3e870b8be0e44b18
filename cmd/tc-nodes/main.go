// Command tc-nodes runs the nodes phase of a talosc run as a Unix filter.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcnodes"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(tcnodes.NewCommand(s, nil), os.Args[1:], s))
}
