package phase

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// Model is a builtin phase whose cloud work is done by a provider
// implementation. It always reports the desired model the phase derives from
// cluster.yaml; the cloud part reports provider.NotAvailableError until a
// provider is compiled in, so a real run fails cleanly and changes nothing,
// and a dry run is deferred (it cannot observe what would change).
type Model struct {
	// PhaseName is the section the phase owns.
	PhaseName string
	// Desired derives the phase's desired model from the configuration.
	Desired func(*config.Cluster) any
	// Unknown names the outputs known only after a real converge.
	Unknown []string
	// CheckItems returns the phase's check findings and why they are incomplete.
	CheckItems func(*config.Cluster) ([]Finding, []string)
}

// Outputs is what a Model phase records in its section.
type Outputs struct {
	Provider string `json:"provider"`
	Desired  any    `json:"desired"`
}

// Name returns the section name.
func (m *Model) Name() string { return m.PhaseName }

// record stores the desired model in sec and returns the error the cloud
// part reports.
func (m *Model) record(in *Input, sec *state.Section) error {
	if err := sec.SetOutputs(Outputs{Provider: in.Config.Provider(), Desired: m.Desired(in.Config)}); err != nil {
		return err
	}
	sec.Unknown = m.Unknown
	return &provider.NotAvailableError{Provider: in.Config.Provider(), Phase: m.PhaseName}
}

// Converge records the desired model. Planning succeeds with a note that
// nothing was observed; a real converge fails cleanly.
func (m *Model) Converge(_ context.Context, in *Input, sec *state.Section) error {
	return m.planOnly(in, sec, "changes")
}

// Destroy records the desired model. A dry run succeeds with a note that
// nothing was observed; a real destroy fails cleanly (nothing can be found,
// so nothing is removed).
func (m *Model) Destroy(_ context.Context, in *Input, sec *state.Section) error {
	return m.planOnly(in, sec, "removals")
}

func (m *Model) planOnly(in *Input, sec *state.Section, what string) error {
	err := m.record(in, sec)
	if in.DryRun && errors.Is(err, provider.ErrNotAvailable) {
		sec.Status = state.StatusDeferred
		sec.Messages = append(sec.Messages, fmt.Sprintf("deferred: the %s provider is not available in this build, so nothing was observed and no %s are planned", in.Config.Provider(), what))
		return nil
	}
	return err
}

// Status fails cleanly: without a provider nothing can be observed.
func (m *Model) Status(_ context.Context, in *Input, sec *state.Section) error {
	return m.record(in, sec)
}

// Check reports the phase's findings; it never needs provider credentials.
func (m *Model) Check(_ context.Context, in *Input) (Report, error) {
	if m.CheckItems == nil {
		return Report{OK: true}, nil
	}
	items, incomplete := m.CheckItems(in.Config)
	rep := Report{Items: items, Incomplete: incomplete, OK: len(incomplete) == 0}
	for _, it := range items {
		if it.Attention != "" {
			rep.OK = false
		}
	}
	return rep, nil
}

// ClientFile returns the path of a client file (talosconfig, kubeconfig) in
// the cluster directory and whether it exists and is not empty.
func ClientFile(cfg *config.Cluster, name string) (string, bool) {
	p := filepath.Join(cfg.Dir, name)
	fi, err := os.Stat(p)
	return p, err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}
