// Package preflight is the whole-run validation every converge runs before
// its first mutation (reference §3.1 step 1, I-9, I-1, I-11, I-12, I-S1,
// I-S2, I-T1): the provider inventory, the changes the provider cannot make
// to existing machines, a lost identity, the removals cluster.yaml asks for
// (an even or zero control-plane count refused, a scale-down confirmed),
// Talos or Kubernetes downgrades and upgrades that cannot be reached from
// what every node runs, Tailscale toggles on a live cluster, and, on a live cluster, that every existing
// node answers (a node in an unknown state is never assumed safe to leave
// behind). The first phase of a run (image, or net run alone) runs it and
// records the fact in its section; the nodes phase then only reads the
// inventory again. Every decision about the running cluster is retried,
// and "could not tell" refuses.
package preflight

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/talos/identity"
)

// Run validates the run against the cloud and the running cluster and
// returns the provider inventory and the fact the caller records.
func Run(ctx context.Context, in *phase.Input, cloud provider.Cloud) (*provider.Inventory, *phase.Validated, error) {
	cfg := in.Config
	inv, err := cloud.Inventory(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	desired := cfg.Hostnames()
	if err := errors.Join(
		cloud.ValidateMachines(ctx, cfg, desired, inv),
		identity.CheckRecoverable(cfg.Dir, inv.Hostnames()),
	); err != nil {
		return inv, nil, err
	}
	live, err := observe(ctx, in, inv)
	if err != nil {
		return inv, nil, err
	}
	removals, err := checkRemovals(in, inv, live)
	if err != nil {
		return inv, nil, err
	}
	if err := errors.Join(live.checkVersions(cfg), live.checkTailscale(cfg)); err != nil {
		return inv, nil, err
	}
	if err := confirm(in, removals); err != nil {
		return inv, nil, err
	}
	return inv, &phase.Validated{Fingerprint: Fingerprint(in), Removals: removals}, nil
}

// Validate is the in-process phase.Validator (tc-nodes validate, and the
// tests that run the phases in one process).
func Validate(ctx context.Context, in *phase.Input) (*phase.Validated, error) {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return nil, err
	}
	_, fact, err := Run(ctx, in, cloud)
	return fact, err
}

// Validated is the nodes phase's validation: when an earlier phase of this
// run recorded that it validated this cluster.yaml, only the inventory is
// read again and that fact returned; otherwise the whole validation runs.
func Validated(ctx context.Context, in *phase.Input, cloud provider.Cloud) (*provider.Inventory, *phase.Validated, error) {
	if fact := upstream(in); fact != nil {
		inv, err := cloud.Inventory(ctx, in.Config)
		return inv, fact, err
	}
	return Run(ctx, in, cloud)
}

// upstream is an earlier phase's validation fact for this cluster.yaml in
// a section that succeeded (a replayed document of another configuration
// does not count), nil if there is none.
func upstream(in *phase.Input) *phase.Validated {
	want := Fingerprint(in)
	img, ok, err := sections.ReadImage(in.State)
	if err == nil && ok && img.Validated != nil && img.Validated.Fingerprint == want && succeeded(in.State, phase.Image) {
		return img.Validated
	}
	net, ok, err := sections.ReadNetwork(in.State)
	if err == nil && ok && net.Validated != nil && net.Validated.Fingerprint == want && succeeded(in.State, phase.Net) {
		return net.Validated
	}
	return nil
}

func succeeded(doc *state.Document, name string) bool {
	sec, ok, err := doc.Section(name)
	return err == nil && ok && sec.Status == state.StatusSucceeded
}

// Fingerprint identifies the loaded cluster.yaml (secret values are
// redacted when marshalled, so none goes into the hash) and the run's
// action, so a plan's fact is never taken for a converge's.
func Fingerprint(in *phase.Input) string {
	data, _ := json.Marshal(in.Config) //nolint:errchkjson // a loaded Cluster always marshals
	h := sha256.New()
	h.Write(data)
	fmt.Fprintf(h, "\x00%t\x00%t\x00%q", in.DryRun, in.Yes, in.Confirmed)
	return hex.EncodeToString(h.Sum(nil))
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
