package sections

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// FactLifetime is how long a validation fact stands for the phases after
// the one that made it. The phases of one run follow each other (an image
// upload takes minutes); a fact older than this, or dated ahead of the
// clock, is a saved or replayed document's, and the validation is run
// again: that costs one validation, never a mutation on stale evidence.
const FactLifetime = time.Hour

// clockSkew is how far ahead of this process's clock a fact made by
// another process of the same run may be dated.
const clockSkew = time.Minute

// NewFact is the fact of a validation that passed now for in, having seen
// inv, confirming removals.
func NewFact(in *phase.Input, inv *provider.Inventory, removals []string) *phase.Validated {
	return &phase.Validated{Fingerprint: Fingerprint(in), Inventory: InventoryDigest(inv), At: time.Now().UTC(), Removals: removals}
}

// Upstream is the validation fact an earlier phase of this run recorded
// in the section of one of from (image, net) that succeeded, nil if none
// holds: a fact holds when it was made for this cluster.yaml and mode
// (Fingerprint), within FactLifetime of now, and saw the same machines as
// inv, the inventory read now. Anything else (a replayed document, a
// cluster.yaml edited since, machines created or removed since) is
// validated again.
func Upstream(in *phase.Input, inv *provider.Inventory, now time.Time, from ...string) *phase.Validated {
	want, machines := Fingerprint(in), InventoryDigest(inv)
	for _, name := range from {
		fact := recorded(in.State, name)
		if fact != nil && fact.Fingerprint == want && fact.Inventory == machines && fresh(fact.At, now) {
			return fact
		}
	}
	return nil
}

// Validation is the fact of the validation heading this run's pipe
// (tc-nodes validate writes it as the nodes section, which the nodes
// phase replaces at the end of the pipe), for the first phase it feeds.
// The fact is fresh when the phase, recomputing it, finds this
// cluster.yaml with its includes and the same mode (Fingerprint), the
// fact made within FactLifetime of now and, when inv (the inventory read
// now) is not nil, the same machines. A refusal of the validation is
// returned, silent (the validation printed it), as the error it made (a
// scale-down's question as a ConfirmError), so the phase carries it on; a
// missing or stale fact is a usage error naming the command to put first.
func Validation(in *phase.Input, inv *provider.Inventory, now time.Time) (*phase.Validated, error) {
	sec, ok, err := in.State.Section(phase.Nodes)
	if err != nil {
		return nil, err
	}
	if ok && sec.Status == state.StatusFailed && sec.Error != nil {
		// The validation reported it on stderr already: once is enough.
		refused := errors.New(sec.Error.Message)
		if sec.Error.Confirm != "" {
			refused = &phase.ConfirmError{Prompt: sec.Error.Confirm, Names: sec.Error.Confirming}
		}
		return nil, &cli.ExitError{Code: cli.ExitFailure, Err: refused, Silent: true}
	}
	fact, put := recorded(in.State, phase.Nodes), phase.HandPipe(in.DryRun)
	switch {
	case fact == nil:
		return nil, cli.Usagef("stdin carries no validation: put `%s` first: %s", phase.ValidateCommand(in.DryRun), put)
	case fact.Fingerprint != Fingerprint(in):
		return nil, cli.Usagef("the validation on stdin was made for another cluster.yaml or mode (--dry-run, --yes, --confirmed): validate again: %s", put)
	case !fresh(fact.At, now):
		return nil, cli.Usagef("the validation on stdin was made at %s, not within %s of now: validate again: %s", fact.At.Format(time.RFC3339), FactLifetime, put)
	case inv != nil && fact.Inventory != InventoryDigest(inv):
		return nil, cli.Usagef("the owned machines changed since the validation on stdin: validate again: %s", put)
	}
	return fact, nil
}

// recorded is the fact in the succeeded section name of doc, nil if none.
func recorded(doc *state.Document, name string) *phase.Validated {
	sec, ok, err := doc.Section(name)
	if err != nil || !ok || sec.Status != state.StatusSucceeded {
		return nil
	}
	var fact *phase.Validated
	switch name {
	case phase.Image:
		img, _, err := ReadImage(doc)
		if err == nil {
			fact = img.Validated
		}
	case phase.Net:
		net, _, err := ReadNetwork(doc)
		if err == nil {
			fact = net.Validated
		}
	case phase.Nodes: // the validation heading the pipe
		v, _, err := state.Outputs[phase.Validated](doc, name)
		if err == nil && v.Fingerprint != "" {
			fact = &v
		}
	}
	return fact
}

// fresh reports a fact made at within FactLifetime before now.
func fresh(at, now time.Time) bool {
	return !at.IsZero() && !at.After(now.Add(clockSkew)) && now.Sub(at) <= FactLifetime
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

// InventoryDigest identifies the owned machines: each one's name, id,
// role, pool and what it was created with, not its status or address
// (a machine still booting is the same machine).
func InventoryDigest(inv *provider.Inventory) string {
	var ms []provider.Machine
	if inv != nil {
		ms = slices.Clone(inv.Machines)
	}
	slices.SortFunc(ms, func(a, b provider.Machine) int { return cmp.Compare(a.Hostname, b.Hostname) })
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%q %q %q %q %q %d %q\n", m.Hostname, m.ID, m.Role, m.Pool, m.Flavor, m.DiskGB, m.Zone)
	}
	return hex.EncodeToString(h.Sum(nil))
}
