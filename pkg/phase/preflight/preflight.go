// Package preflight is the whole-run validation every converge runs before
// its first mutation (reference §3.1 step 1, I-9, I-1, I-11, I-12, I-S1,
// I-S2, I-T1): the provider inventory, the changes the provider cannot make
// to existing machines, a lost identity, the removals cluster.yaml asks for
// (an even or zero control-plane count refused, a scale-down confirmed),
// Talos or Kubernetes downgrades and upgrades that cannot be reached from
// what every node runs, Tailscale toggles on a live cluster, and, on a live cluster, that every existing
// node answers (a node in an unknown state is never assumed safe to leave
// behind). It heads every plan and converge pipe (tc-nodes validate), and
// the first phase it feeds records its fact; the nodes phase then only
// reads the inventory again. Every decision about the running cluster is retried,
// and "could not tell" refuses.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// Run validates the run against the cloud and the running cluster and
// returns the provider inventory and the fact the caller records.
func Run(ctx context.Context, in *phase.Input, cloud provider.Cloud) (*provider.Inventory, *phase.Validated, error) {
	inv, err := cloud.Inventory(ctx)
	if err != nil {
		return nil, nil, err
	}
	fact, err := check(ctx, in, cloud, inv)
	return inv, fact, err
}

// check is the validation of the run, with inv the inventory read now.
func check(ctx context.Context, in *phase.Input, cloud provider.Cloud, inv *provider.Inventory) (*phase.Validated, error) {
	cfg := in.Config
	desired := cfg.Hostnames()
	if err := errors.Join(
		cloud.ValidateMachines(ctx, desired, inv),
		identity.CheckRecoverable(cfg.Dir, inv.Hostnames()),
	); err != nil {
		return nil, err
	}
	seen, err := observe(ctx, in, inv)
	if err != nil {
		return nil, err
	}
	removals, err := checkRemovals(in, inv, seen)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(seen.checkVersions(cfg), seen.checkTailscale(cfg)); err != nil {
		return nil, err
	}
	if err := confirm(in, removals); err != nil {
		return nil, err
	}
	return sections.NewFact(in, inv, removals), nil
}

// WithValidation is p serving the whole-run validation (Validate) as its
// "validate" action: the nodes phase of tc-nodes, whose "tc-nodes
// validate" heads every plan and converge pipe.
func WithValidation(p phase.Phase) phase.Validator { return validating{p} }

type validating struct{ phase.Phase }

// Backup is the wrapped phase's backup (a phase.Backuper's).
func (v validating) Backup(ctx context.Context, in *phase.Input) (any, error) {
	b, ok := v.Phase.(phase.Backuper)
	if !ok {
		return nil, fmt.Errorf("the %s phase takes no backup", v.Name())
	}
	return b.Backup(ctx, in)
}

func (validating) Validate(ctx context.Context, in *phase.Input) (*phase.Validated, error) {
	return Validate(ctx, in)
}

// Validate validates the run against the cloud and the running cluster
// and returns the fact the head of the pipe records.
func Validate(ctx context.Context, in *phase.Input) (*phase.Validated, error) {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return nil, err
	}
	_, fact, err := Run(ctx, in, cloud)
	return fact, err
}

// Validated is the nodes phase's validation: when the validation heading
// the pipe or an earlier phase of this run recorded a fact that still
// holds (sections.Upstream: this cluster.yaml and mode, the machines read
// now, made within the fact's lifetime), only the inventory is read;
// otherwise (a saved or replayed document among them) the whole
// validation runs again, in this process.
func Validated(ctx context.Context, in *phase.Input, cloud provider.Cloud) (*provider.Inventory, *phase.Validated, error) {
	inv, err := cloud.Inventory(ctx)
	if err != nil {
		return nil, nil, err
	}
	if fact := sections.Upstream(in, inv, time.Now(), phase.Image, phase.Net, phase.Nodes); fact != nil {
		return inv, fact, nil
	}
	fact, err := check(ctx, in, cloud, inv)
	return inv, fact, err
}

// confirm refuses an unconfirmed removal in a real run (I-S2): --yes
// confirms any, --confirmed exactly the nodes it names (a set that changed
// since the question is asked again).
func confirm(in *phase.Input, removals []string) error {
	if len(removals) == 0 || in.DryRun || in.Yes || slices.Equal(slices.Sorted(slices.Values(in.Confirmed)), removals) {
		return nil
	}
	return &phase.ConfirmError{Prompt: fmt.Sprintf("scale down will remove %d node(s): %s", len(removals), joinNames(removals)), Names: removals}
}
