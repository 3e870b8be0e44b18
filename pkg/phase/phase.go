// Package phase runs one builtin step of a talosc run (image, net, nodes) as a
// Unix filter: it reads cluster.yaml and the state document of earlier phases
// on stdin, does its work, and writes the document with its own section on
// stdout. Humans read stderr.
package phase

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/report"
	"github.com/talosc/talosc/pkg/state"
	"github.com/talosc/talosc/pkg/ui"
)

// Actions a phase binary takes as its subcommand.
const (
	ActionPlan     = "plan"
	ActionConverge = "converge"
	ActionStatus   = "status"
	ActionCheck    = "check"
	ActionDestroy  = "destroy"
	// ActionValidate is the whole-run validation, the head of every plan
	// and converge pipe (tc-nodes validate | tc-image converge | ...): a
	// phase that serves it is a Validator.
	ActionValidate = "validate"
	// ActionBackup takes the cluster's verified, encrypted etcd backup: a
	// phase that serves it is a Backuper.
	ActionBackup = "backup"
)

// Builtin phase names, in converge order. Destroy runs them in reverse.
const (
	Image = "image"
	Net   = "net"
	Nodes = "nodes"
)

// ValidateCommand is the command heading a plan (dryRun) or converge pipe.
func ValidateCommand(dryRun bool) string {
	if dryRun {
		return "tc-nodes validate --dry-run"
	}
	return "tc-nodes validate"
}

// ValidateArgs are the arguments of the validation heading a pipe of
// action (plan or converge) whose phases get flags: --dry-run for a plan,
// and the confirmations (--yes, --confirmed) the phases were given.
func ValidateArgs(action string, flags []string) []string {
	args := []string{ActionValidate}
	if action == ActionPlan {
		args = append(args, "--dry-run")
	}
	for _, f := range flags {
		if f == "--yes" || strings.HasPrefix(f, "--confirmed=") {
			args = append(args, f)
		}
	}
	return args
}

// HandPipe is the whole pipe of a plan (dryRun) or converge by hand, as
// the front door runs it: the validation, then every phase.
func HandPipe(dryRun bool) string {
	action := ActionConverge
	if dryRun {
		action = ActionPlan
	}
	pipe := []string{ValidateCommand(dryRun)}
	for _, name := range Names() {
		pipe = append(pipe, "tc-"+name+" "+action)
	}
	return strings.Join(pipe, " | ")
}

// Names returns the builtin phases in converge order.
func Names() []string { return []string{Image, Net, Nodes} }

// OrderFor returns the builtin phases in the order action runs them.
func OrderFor(action string) []string {
	names := Names()
	if action == ActionDestroy {
		slices.Reverse(names)
	}
	return names
}

// Upstream returns the phases that run before name for action.
func Upstream(name, action string) []string {
	order := OrderFor(action)
	return order[:slices.Index(order, name)]
}

// Input is everything a phase may read.
type Input struct {
	Config *config.Cluster
	// State holds the sections of earlier phases (read-only by convention).
	State  *state.Document
	DryRun bool
	// Reboot asks for nodes with pending sizing or NIC changes to be restarted.
	Reboot bool
	// NoBackup skips the backup taken before a risky change (converge
	// --no-backup).
	NoBackup bool
	// Quiet asks for no progress, only errors (backup --quiet).
	Quiet bool
	// Yes confirms a scale-down (converge --yes), whatever it removes.
	Yes bool
	// Confirmed confirms a scale-down of exactly these nodes (converge
	// --confirmed, what the front door passes after asking).
	Confirmed []string
	Out       *ui.Printer
	// Env is the run's environment: provider connection, time scale.
	Env *Env
	// ExpiryWarning is how long before a certificate expires check warns.
	ExpiryWarning time.Duration
}

// Phase is one builtin step. Implementations never write outside their own
// section and perform no mutation in Plan, Status or Check, or when
// in.DryRun is set.
type Phase interface {
	// Name is the state section the phase owns.
	Name() string
	// Converge makes the cloud match the configuration (or, with in.DryRun,
	// only plans), recording changes and outputs in sec as it goes so that a
	// failure part-way still reports what was done.
	Converge(ctx context.Context, in *Input, sec *state.Section) error
	// Destroy removes what the phase owns (or plans to, with in.DryRun).
	Destroy(ctx context.Context, in *Input, sec *state.Section) error
	// Status reports what exists, into sec.Outputs.
	Status(ctx context.Context, in *Input, sec *state.Section) error
	// Check reports what needs attention; it needs no provider credentials.
	Check(ctx context.Context, in *Input) (Report, error)
}

// Report is a check result (its section's outputs). OK false makes check
// exit 1.
type Report = report.Findings

// Finding is one line of a check report.
type Finding = report.Item

// ConfirmError is a change that needs a human's yes (a scale-down):
// nothing was changed; the front door asks Prompt and runs again with
// --yes.
type ConfirmError struct {
	Prompt string
	// Names are what a yes confirms (passed back with --confirmed).
	Names []string
}

func (e *ConfirmError) Error() string {
	return e.Prompt + "; nothing was changed: confirm with converge --yes (a phase in a pipe cannot prompt)"
}

// Validated is the fact a phase records when it ran the whole-run
// validation before its first mutation: the later phases of the same run
// need not repeat it. It holds only for the run it was made in
// (sections.Upstream): the same cluster.yaml and mode, the same machines,
// and made moments ago.
type Validated struct {
	// Fingerprint identifies the loaded cluster.yaml (secrets redacted)
	// and the run's mode.
	Fingerprint string `json:"fingerprint"`
	// Inventory identifies the owned machines the validation saw.
	Inventory string `json:"inventory"`
	// At is when the validation ran.
	At time.Time `json:"at"`
	// Removals are the machines the run confirmed removing.
	Removals []string `json:"removals,omitempty"`
}

// Validator is a phase that serves the whole-run validation as its
// "validate" action: tc-nodes, the one binary that links what validating
// a live cluster needs (preflight.WithValidation). The validation heads the
// pipe and writes its fact, or its refusal, as the section of the phase
// serving it; the first phase it feeds carries the verdict on
// (sections.Validation), and no phase runs another.
type Validator interface {
	Phase
	// Validate validates the run for in and returns its fact.
	Validate(ctx context.Context, in *Input) (*Validated, error)
}

// Backuper is a phase that serves the cluster's backup as its "backup"
// action: tc-nodes, which links what reading etcd through Talos needs.
// Its outputs go into the phase's section.
type Backuper interface {
	Phase
	// Backup takes, verifies, stores and prunes one backup.
	Backup(ctx context.Context, in *Input) (any, error)
}
