package sections_test

import (
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/sections"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// TestUpstream: a recorded validation fact stands for a later phase only
// for the run that made it: this cluster.yaml and mode, the same
// machines, within its lifetime, in a section that succeeded (S7).
func TestUpstream(t *testing.T) {
	t.Parallel()
	built := &provider.Inventory{Machines: []provider.Machine{
		{Hostname: "c-controlplane-01", ID: "a", Role: "controlplane", Flavor: "cp", Status: "ACTIVE"},
		{Hostname: "c-worker-01", ID: "b", Role: "worker", Pool: "default", Flavor: "w"},
	}}
	booting := &provider.Inventory{Machines: []provider.Machine{built.Machines[1], built.Machines[0]}}
	booting.Machines[1].Status = "BUILD"
	replaced := &provider.Inventory{Machines: []provider.Machine{built.Machines[0], {Hostname: "c-worker-01", ID: "c", Role: "worker", Pool: "default", Flavor: "w"}}}
	now := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		section string
		status  state.Status
		at      time.Time
		edit    func(*phase.Input)
		now     *provider.Inventory
		holds   bool
	}{
		{"this run's image phase", phase.Image, state.StatusSucceeded, now.Add(-time.Minute), nil, built, true},
		{"this run's net phase", phase.Net, state.StatusSucceeded, now.Add(-time.Minute), nil, built, true},
		{"a machine's status or order changed", phase.Image, state.StatusSucceeded, now.Add(-time.Minute), nil, booting, true},
		{"a machine replaced since", phase.Image, state.StatusSucceeded, now.Add(-time.Minute), nil, replaced, false},
		{"machines created since", phase.Image, state.StatusSucceeded, now.Add(-time.Minute), nil, &provider.Inventory{}, false},
		{"yesterday's document", phase.Image, state.StatusSucceeded, now.Add(-24 * time.Hour), nil, built, false},
		{"just past its lifetime", phase.Image, state.StatusSucceeded, now.Add(-sections.FactLifetime - time.Second), nil, built, false},
		{"dated ahead of the clock", phase.Image, state.StatusSucceeded, now.Add(time.Hour), nil, built, false},
		{"no time", phase.Image, state.StatusSucceeded, time.Time{}, nil, built, false},
		{"failed section", phase.Image, state.StatusFailed, now.Add(-time.Minute), nil, built, false},
		{"cluster.yaml edited", phase.Image, state.StatusSucceeded, now.Add(-time.Minute), func(in *phase.Input) { in.Config.Name = "d" }, built, false},
		{"a plan's fact in a converge", phase.Image, state.StatusSucceeded, now.Add(-time.Minute), func(in *phase.Input) { in.DryRun = false }, built, false},
	} {
		in := &phase.Input{Config: &config.Cluster{Name: "c"}, DryRun: true}
		fact := sections.NewFact(in, built, nil)
		fact.At = tc.at
		doc := state.New("c", phase.ActionConverge)
		sec := state.Section{Status: tc.status}
		var outputs any = sections.Image{Validated: fact}
		if tc.section == phase.Net {
			outputs = sections.Network{Validated: fact}
		}
		if err := sec.SetOutputs(outputs); err != nil {
			t.Fatal(err)
		}
		if err := doc.Put(tc.section, sec); err != nil {
			t.Fatal(err)
		}
		in.State = doc
		if tc.edit != nil {
			tc.edit(in)
		}
		got := sections.Upstream(in, tc.now, now, phase.Image, phase.Net)
		if (got != nil) != tc.holds {
			t.Errorf("%s: Upstream = %+v, want a fact: %t", tc.name, got, tc.holds)
		}
	}
}
