// Command tc-rancher is the talosc plugin that registers the cluster with
// Rancher and keeps its members in sync.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcrancher"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(tcrancher.NewCommand(s), os.Args[1:], s))
}
