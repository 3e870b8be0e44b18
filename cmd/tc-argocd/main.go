// Command tc-argocd is the talosc plugin that registers the cluster with
// ArgoCD and installs its platform applications.
package main

import (
	"os"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/tcargocd"
)

func main() {
	s := cli.StdStreams()
	os.Exit(cli.Run(tcargocd.NewCommand(s), os.Args[1:], s))
}
