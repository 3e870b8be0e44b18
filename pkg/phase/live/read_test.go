package live_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/kube"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/phase/live"
	"github.com/talosc/talosc/pkg/ui"
)

// scaled is an input at TALOSC_TIME_SCALE scale.
func scaled(t *testing.T, scale string) *phase.Input {
	t.Helper()
	env, err := phase.NewEnv(func(k string) (string, bool) { return scale, k == phase.EnvTimeScale }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &phase.Input{Out: ui.New(io.Discard, nil), Env: env}
}

// probeKube records how it was probed.
type probeKube struct {
	attempts int
	interval time.Duration
}

func (k *probeKube) Probe(_ context.Context, attempts int, interval time.Duration) (bool, error) {
	k.attempts, k.interval = attempts, interval
	return true, nil
}

func (k *probeKube) ServerVersion(context.Context) (string, error) { return "", nil }

func (k *probeKube) Nodes(context.Context) ([]kube.Node, error) { return nil, nil }

// TestProbe is I-3: three attempts 10 s apart, scaled.
func TestProbe(t *testing.T) {
	t.Parallel()
	k := &probeKube{}
	if up, err := live.Probe(t.Context(), scaled(t, "0.5").Env, k); !up || err != nil {
		t.Fatalf("up %v, err %v", up, err)
	}
	if k.attempts != 3 || k.interval != 5*time.Second {
		t.Errorf("probed %d times %s apart, want 3 times 5s apart", k.attempts, k.interval)
	}
}

// talos answers Version once reachable; waited is the budget it was
// given.
type talos struct {
	down, comesBack bool
	waited          time.Duration
}

func (f *talos) Version(context.Context, string) (string, error) {
	if f.down {
		return "", errors.New("connection refused")
	}
	return "v1.13.8", nil
}

func (f *talos) WaitReachable(_ context.Context, _ string, budget, _ time.Duration, _ func(time.Duration)) error {
	f.waited = budget
	if !f.comesBack {
		return errors.New("still silent")
	}
	f.down = false
	return nil
}

// TestVersion is I-V1's reboot's time: a node that does not answer is
// waited for (5 minutes, scaled) and asked again; one that stays silent
// fails with its first answer.
func TestVersion(t *testing.T) {
	t.Parallel()
	in := scaled(t, "0.01")
	rebooting := &talos{down: true, comesBack: true}
	if v, err := live.Version(t.Context(), in, rebooting, "127.0.0.21"); v != "v1.13.8" || err != nil || rebooting.waited != 3*time.Second {
		t.Errorf("rebooting: %q, %v, waited %s", v, err, rebooting.waited)
	}
	silent := &talos{down: true}
	if _, err := live.Version(t.Context(), in, silent, "127.0.0.22"); err == nil || err.Error() != "connection refused" {
		t.Errorf("silent: %v", err)
	}
	up := &talos{}
	if _, err := live.Version(t.Context(), in, up, "127.0.0.23"); err != nil || up.waited != 0 {
		t.Errorf("up: %v, waited %s", err, up.waited)
	}
}
