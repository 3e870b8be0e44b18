// Package phase runs one builtin step of a talosc run (image, net, nodes) as a
// Unix filter: it reads cluster.yaml and the state document of earlier phases
// on stdin, does its work, and writes the document with its own section on
// stdout. Humans read stderr.
package phase

import (
	"context"
	"slices"

	"github.com/talosc/talosc/pkg/config"
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
)

// Builtin phase names, in converge order. Destroy runs them in reverse.
const (
	Image = "image"
	Net   = "net"
	Nodes = "nodes"
)

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
	Out    *ui.Printer
	// Env is the run's environment: provider connection, Image Factory,
	// time scale.
	Env *Env
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

// Report is a check result. OK false makes check exit 1.
type Report struct {
	OK bool `json:"ok"`
	// Items are the findings, in a stable order.
	Items []Finding `json:"items,omitempty"`
	// Incomplete lists why the check could not look at everything.
	Incomplete []string `json:"incomplete,omitempty"`
}

// Finding is one line of a check report.
type Finding struct {
	Name       string `json:"name"`
	Configured string `json:"configured,omitempty"`
	Observed   string `json:"observed,omitempty"`
	Attention  string `json:"attention,omitempty"`
}
