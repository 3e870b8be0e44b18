// Package tcnodes is the tc-nodes binary: identity, machines, Talos
// configuration, bootstrap, kubeconfig and health.
package tcnodes

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
)

// NewCommand returns the tc-nodes root command. runF replaces the run in tests.
func NewCommand(s cli.Streams, runF func(context.Context, *phase.Options, string) error) *cobra.Command {
	root := phase.NewCommand(s, &phase.Model{
		PhaseName: phase.Nodes,
		Desired:   func(c *config.Cluster) any { return desired(c) },
		Unknown:   []string{"addresses", "kubeconfig"},
		CheckItems: func(c *config.Cluster) ([]phase.Finding, []string) {
			items := []phase.Finding{
				{Name: "talos", Configured: c.Talos.Version},
				{Name: "kubernetes", Configured: c.Kubernetes.Version},
			}
			if _, ok := phase.ClientFile(c, config.TalosconfigFile); !ok {
				return items, []string{"running versions: no talosconfig yet (has converge run?)"}
			}
			return items, []string{"running versions and newest releases: not available in this talosc build"}
		},
	}, runF)
	root.AddCommand(newConfigsCommand(s, nil))
	return root
}

// Machine is one desired machine.
type Machine struct {
	Hostname string `json:"hostname"`
	Role     string `json:"role"`
	Pool     string `json:"pool"`
}

func desired(c *config.Cluster) []Machine {
	hosts := c.Hostnames()
	out := make([]Machine, len(hosts))
	for i, h := range hosts {
		out[i] = Machine{Hostname: h.Hostname, Role: h.Role, Pool: h.Pool}
	}
	return out
}
