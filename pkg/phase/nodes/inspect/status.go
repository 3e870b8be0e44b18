package inspect

import (
	"context"
	"time"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// Status reports the owned machines and, when the API answers, the nodes.
func Status(ctx context.Context, in *phase.Input, sec *state.Section) error {
	_, inv, err := in.Inventory(ctx)
	if err != nil {
		return err
	}
	out := sections.Nodes{Provider: in.Config.Provider(), Machines: inv.Machines, Backup: backup.Check(ctx, in.Config, in.ObjectStore, time.Now())}
	if path, ok := phase.ClientFile(in.Config, config.TalosconfigFile); ok {
		if ep, ok, _ := identity.ReadTalosconfigEndpoint(path); ok {
			out.TalosEndpoint = ep
		}
	}
	if path, ok := phase.ClientFile(in.Config, config.KubeconfigFile); ok {
		out.Bootstrapped = true
		if kc, err := kube.Load(path, kube.Options{}); err == nil {
			out.KubernetesEndpoint = kc.Server()
			if nodes, err := kc.Nodes(ctx); err == nil {
				out.Up, out.Nodes = true, nodes
			} else {
				sec.Messages = append(sec.Messages, "kubernetes api not reachable: "+err.Error())
			}
		}
	}
	return sec.SetOutputs(out)
}
