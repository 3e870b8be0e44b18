package talosc

import (
	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/schema"
)

func newSchemaCommand(g *Globals) *cobra.Command {
	return &cobra.Command{
		Use:   "schema cluster|state|plan|check",
		Short: "Print the JSON Schema of cluster.yaml, of the state document, of the plan document or of the check report",
		Example: `  # Let your editor complete cluster.yaml (yaml-language-server)
  kubectl talosc schema cluster > cluster.schema.json
  # then put this first line in cluster.yaml:
  # yaml-language-server: $schema=cluster.schema.json`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"cluster", "state", "plan", "check"},
		RunE: func(_ *cobra.Command, args []string) error {
			var data []byte
			switch args[0] {
			case "cluster":
				data = schema.Cluster()
			case "state":
				data = schema.State()
			case "plan":
				data = schema.Plan()
			case "check":
				data = schema.Check()
			default:
				return cli.Usagef("schema %q: choose cluster, state, plan or check", args[0])
			}
			_, err := g.Streams.Out.Write(data)
			return err
		},
	}
}
