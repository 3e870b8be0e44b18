package nodes_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/bootimage"
	"github.com/talosc/talosc/pkg/phase/network"
)

// TestReplayedStateRevalidated (S7): the image and net phases' document
// saved before the cluster was built, replayed into tc-nodes after a
// scale-up and back (cluster.yaml as it was, one worker more in the
// cloud), does not stand for this run's validation: the validation runs
// again and asks to confirm the removal, before any mutation.
func TestReplayedStateRevalidated(t *testing.T) {
	d := newLabDir(t)
	saved, stderr, err := d.phases(t, phase.ActionConverge, false, nil, bootimage.Phase{}, network.Phase{})
	if err != nil {
		t.Fatalf("image and net converge: %v\n%s", err, stderr)
	}
	one, two := "    count: 1\n    flavor: talos.worker\n", "    count: 2\n    flavor: talos.worker\n"
	d.edit(t, one, two)
	if _, stderr, err := d.run(t, phase.ActionConverge); err != nil {
		t.Fatalf("converge with two workers: %v\n%s", err, stderr)
	}
	d.edit(t, two, one)
	d.lab.Recorder().Reset()
	_, stderr, err = d.nodes(t, phase.ActionConverge, false, saved)
	var confirm *phase.ConfirmError
	if !errors.As(err, &confirm) || !strings.Contains(err.Error(), "drift-worker-02") {
		t.Errorf("replayed converge: %v, want the scale-down's question\n%s", err, stderr)
	}
	if m := mutations(d); len(m) != 0 {
		t.Errorf("the replayed converge made %q", m)
	}
}
