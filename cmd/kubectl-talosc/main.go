// Command kubectl-talosc is the talosc front door, a kubectl plugin: it runs
// the phase binaries joined by pipes, then the plugins.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/talosc"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(talosc.NewRoot(s), os.Args[1:], s))
}
