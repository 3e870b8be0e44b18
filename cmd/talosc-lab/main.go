// Command talosc-lab runs a whole cloud for talosc on loopback.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/talosclab"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(talosclab.NewCommand(s), os.Args[1:], s))
}
