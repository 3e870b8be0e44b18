package phase

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/talosc/talosc/pkg/backup"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/provider"
	"github.com/talosc/talosc/pkg/state"
)

// EnvTimeScale is a test-only knob: it multiplies every wait budget and
// polling interval (a positive number; default 1), so a test whose node
// never boots fails in seconds. Nothing else needs it: polls start short
// and back off (ctxwait.Backoff), so a lab run is fast at scale 1. talosc
// warns on every run while it is set (TestKnobWarnings).
const EnvTimeScale = "TALOSC_TIME_SCALE"

// Env is what a phase reads from its environment, resolved once per run.
type Env struct {
	lookup  func(string) (string, bool)
	scale   float64
	connect provider.Connectors

	once  sync.Once
	cloud provider.Cloud
	err   error
}

// NewEnv resolves the environment through lookup; Cloud connects through
// connect, the providers the binary links.
func NewEnv(lookup func(string) (string, bool), connect provider.Connectors) (*Env, error) {
	e := &Env{lookup: lookup, scale: 1, connect: connect}
	if v, ok := lookup(EnvTimeScale); ok && v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return nil, fmt.Errorf("%s=%q: want a positive number such as 0.05", EnvTimeScale, v)
		}
		e.scale = f
	}
	return e, nil
}

// testKnobs are the environment variables that change talosc's behaviour
// for tests, with what they change.
var testKnobs = []struct{ name, does string }{
	{EnvTimeScale, "multiplies every wait budget and poll interval, safety waits included"},
	{plugin.EnvTimeout, "replaces every plugin hook's timeout"},
}

// TestKnobWarnings are the warnings for the test-only knobs set through
// lookup: every binary prints them on every run (the front door for the
// phases it runs), so a shell left with a knob exported cannot quietly
// change a real cluster's run, such as shortening its safety waits.
func TestKnobWarnings(lookup func(string) (string, bool)) []string {
	var out []string
	for _, k := range testKnobs {
		if v, ok := lookup(k.name); ok && v != "" {
			out = append(out, fmt.Sprintf("%s=%s is set: a test-only knob that %s; unset it (export -n %s) for a real cluster", k.name, v, k.does, k.name))
		}
	}
	return out
}

// Scale returns d scaled by TALOSC_TIME_SCALE (at least a millisecond).
func (e *Env) Scale(d time.Duration) time.Duration {
	return max(time.Duration(float64(d)*e.scale), time.Millisecond)
}

// Cloud connects to the cluster's provider once per run, with the run's
// scaled waits; the provider's warnings go to stderr.
func (e *Env) Cloud(ctx context.Context, in *Input) (provider.Cloud, error) {
	e.once.Do(func() {
		logf := func(format string, args ...any) { in.Out.Warn(format, args...) }
		e.cloud, e.err = e.connect.Connect(ctx, in.Config, provider.ConnectOptions{TimeScale: e.Scale, Logf: logf})
	})
	return e.cloud, e.err
}

// ObjectStore is the cluster's cloud as backup.TargetFor reaches
// backup.swift's container (a backup.Cloud): connected once per run, as
// Cloud.
func (in *Input) ObjectStore(ctx context.Context) (backup.ObjectStore, error) {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return nil, err
	}
	s, ok := cloud.(backup.ObjectStore)
	if !ok {
		return nil, fmt.Errorf("the %s provider has no object store to keep backups in", in.Config.Provider())
	}
	return s, nil
}

// NewPlan returns the plan of one run: a dry run records without acting,
// every change is announced on stderr as it starts, and what a dry run
// would do besides is said there.
func (in *Input) NewPlan() *provider.Plan {
	return &provider.Plan{
		DryRun: in.DryRun,
		Progress: func(c state.Change) {
			if !in.DryRun {
				in.Out.Action(false, "%s %s %s", c.Action, c.Kind, c.Name)
			}
		},
		Note: func(msg string) { in.Out.Info("%s", msg) },
	}
}

// Inventory connects to the cluster's cloud and lists what it owns there.
func (in *Input) Inventory(ctx context.Context) (provider.Cloud, *provider.Inventory, error) {
	cloud, err := in.Env.Cloud(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	inv, err := cloud.Inventory(ctx)
	return cloud, inv, err
}
