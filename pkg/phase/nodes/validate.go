package nodes

import (
	"context"
	"path/filepath"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// Validate is the validation a converge runs before its first mutation
// (the image phase, or the net phase run alone, calls it): the preflight
// (inventory, create-only changes, removed machines, a lost identity,
// versions), and, on a cluster whose API answers, the machine
// configurations of existing nodes, which this build cannot roll out: an
// edit that would change them is refused here, before the network is
// touched. A plan skips the configuration comparison; the nodes phase shows
// the diffs.
func Validate(ctx context.Context, in *phase.Input, cloud provider.Cloud) error {
	r := &run{in: in, cfg: in.Config, cloud: cloud, plan: in.NewPlan(), desired: in.Config.Hostnames()}
	if err := r.validate(ctx); err != nil || in.DryRun || len(r.inv.Machines) == 0 {
		return err
	}
	path, ok := phase.ClientFile(r.cfg, config.KubeconfigFile)
	if !ok {
		return nil
	}
	kc, err := r.kube(path)
	if err != nil {
		return nil //nolint:nilerr // an unreadable kubeconfig is the nodes phase's to judge
	}
	if up, _ := kc.Probe(ctx, 1, 0); !up {
		return nil // unreachable: the nodes phase decides (existing but down)
	}
	if r.id, err = identity.Load(filepath.Join(r.cfg.Dir, identity.FileName)); err != nil {
		return err
	}
	return r.checkConfigs(ctx)
}

// validatedUpstream reports that an earlier phase of this converge (image,
// or net run alone) succeeded, so it ran Validate.
func validatedUpstream(doc *state.Document) bool {
	for _, name := range []string{phase.Image, phase.Net} {
		if sec, ok, err := doc.Section(name); err == nil && ok && sec.Status == state.StatusSucceeded {
			return true
		}
	}
	return false
}
