package phase_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/config"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// fakePhase records what it was asked to do.
type fakePhase struct {
	name   string
	err    error
	report phase.Report
	calls  []string
}

func (f *fakePhase) Name() string { return f.name }

func (f *fakePhase) Converge(_ context.Context, in *phase.Input, sec *state.Section) error {
	f.calls = append(f.calls, map[bool]string{true: "plan", false: "converge"}[in.DryRun])
	sec.Plan = append(sec.Plan, state.Change{Action: state.ActionCreate, Kind: "test:thing", Name: "one"})
	return f.err
}

func (f *fakePhase) Destroy(_ context.Context, in *phase.Input, _ *state.Section) error {
	f.calls = append(f.calls, map[bool]string{true: "destroy-dry", false: "destroy"}[in.DryRun])
	return f.err
}

func (f *fakePhase) Status(context.Context, *phase.Input, *state.Section) error {
	f.calls = append(f.calls, "status")
	return f.err
}

func (f *fakePhase) Check(context.Context, *phase.Input) (phase.Report, error) {
	f.calls = append(f.calls, "check")
	return f.report, f.err
}

type result struct {
	code    int
	doc     *state.Document
	stderr  string
	loadOpt config.LoadOptions
}

// run executes the phase binary for f with args and stdin, loading a
// configuration named cluster (or failing with loadErr).
func run(t *testing.T, f *fakePhase, stdin string, loadErr error, args ...string) result {
	t.Helper()
	return runEnv(t, f, nil, stdin, loadErr, args...)
}

// runEnv is run with the variables env set.
func runEnv(t *testing.T, f phase.Phase, env map[string]string, stdin string, loadErr error, args ...string) result {
	t.Helper()
	s, in, out, errOut := genericiooptions.NewTestIOStreams()
	in.WriteString(stdin)
	var res result
	cmd := phase.NewCommand(s, f, nil, func(ctx context.Context, o *phase.Options, action string) error {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "TALOSC_PLUGIN_SECTIONS" {
				return "", true
			}
			v, ok := env[k]
			return v, ok
		}
		o.Load = func(_ string, lo config.LoadOptions) (*config.Cluster, error) {
			res.loadOpt = lo
			if loadErr != nil {
				return nil, loadErr
			}
			return &config.Cluster{Name: "demo"}, nil
		}
		return o.Run(ctx, f, action)
	})
	res.code = cli.Run(cmd, args, s)
	res.stderr = errOut.String()
	if out.Len() > 0 {
		doc, err := state.Parse(out.Bytes())
		if err != nil {
			t.Fatalf("stdout is not a state document: %v\n%s", err, out)
		}
		res.doc = doc
	}
	return res
}

func sectionOf(t *testing.T, doc *state.Document, name string) state.Section {
	t.Helper()
	if doc == nil {
		t.Fatal("no document on stdout")
	}
	s, ok, err := doc.Section(name)
	if err != nil || !ok {
		t.Fatalf("section %s: ok=%v err=%v", name, ok, err)
	}
	return s
}

func docWith(t *testing.T, cluster string, sections map[string]state.Status) string {
	t.Helper()
	d := state.New(cluster, "converge")
	for name, st := range sections {
		if err := d.Put(name, state.Section{Status: st, Producer: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if err := state.Write(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPhaseCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		phase     string
		stdin     func(t *testing.T) string
		args      []string
		err       error
		report    phase.Report
		wantCode  int
		wantCalls []string
		wantStat  state.Status
		wantErr   string
	}{
		{name: "plan on empty stdin starts a document", phase: "image", args: []string{"plan"}, wantCalls: []string{"plan"}, wantStat: state.StatusPlanned},
		{name: "converge", phase: "net", args: []string{"converge"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "demo", map[string]state.Status{"image": state.StatusSucceeded})
		}, wantCalls: []string{"converge"}, wantStat: state.StatusSucceeded},
		{name: "failing phase still writes its section", phase: "image", args: []string{"converge"}, err: errors.New("quota exceeded"), wantCode: 1, wantCalls: []string{"converge"}, wantStat: state.StatusFailed, wantErr: "quota exceeded"},
		{name: "failed upstream skips", phase: "nodes", args: []string{"converge"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "demo", map[string]state.Status{"image": state.StatusSucceeded, "net": state.StatusFailed})
		}, wantCode: 1, wantStat: state.StatusSkipped, wantErr: `phase "net" did not succeed`},
		{name: "a plan cannot feed a converge", phase: "net", args: []string{"converge"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "demo", map[string]state.Status{"image": state.StatusPlanned})
		}, wantCode: 2, wantErr: "only planned"},
		{name: "a plan can feed a plan", phase: "net", args: []string{"plan"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "demo", map[string]state.Status{"image": state.StatusPlanned})
		}, wantCalls: []string{"plan"}, wantStat: state.StatusPlanned},
		{name: "other cluster", phase: "net", args: []string{"plan"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "prod", nil)
		}, wantCode: 2, wantErr: `for cluster "prod"`},
		{name: "destroy needs yes", phase: "nodes", args: []string{"destroy"}, wantCode: 2, wantErr: "needs --yes"},
		{name: "destroy dry run", phase: "nodes", args: []string{"destroy", "--dry-run"}, wantCalls: []string{"destroy-dry"}, wantStat: state.StatusPlanned},
		{name: "destroy runs after nodes", phase: "net", args: []string{"destroy", "--yes"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "demo", map[string]state.Status{"nodes": state.StatusFailed})
		}, wantCode: 1, wantStat: state.StatusSkipped},
		{name: "status ignores failed upstream", phase: "net", args: []string{"status"}, stdin: func(t *testing.T) string {
			t.Helper()
			return docWith(t, "demo", map[string]state.Status{"image": state.StatusFailed})
		}, wantCalls: []string{"status"}, wantStat: state.StatusSucceeded},
		{name: "check needing attention exits 1", phase: "nodes", args: []string{"check"}, report: phase.Report{Incomplete: []string{"no talosconfig"}}, wantCode: 1, wantCalls: []string{"check"}, wantStat: state.StatusSucceeded, wantErr: "check incomplete: no talosconfig"},
		{name: "check ok", phase: "nodes", args: []string{"check"}, report: phase.Report{OK: true}, wantCalls: []string{"check"}, wantStat: state.StatusSucceeded},
		{name: "unknown action", phase: "nodes", args: []string{"frob"}, wantCode: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &fakePhase{name: tc.phase, err: tc.err, report: tc.report}
			stdin := ""
			if tc.stdin != nil {
				stdin = tc.stdin(t)
			}
			res := run(t, f, stdin, nil, tc.args...)
			if res.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", res.code, tc.wantCode, res.stderr)
			}
			if diff := cmp.Diff(tc.wantCalls, f.calls); diff != "" {
				t.Fatalf("calls (-want +got):\n%s", diff)
			}
			if tc.wantErr != "" && !strings.Contains(res.stderr, tc.wantErr) {
				t.Fatalf("stderr %q lacks %q", res.stderr, tc.wantErr)
			}
			if tc.wantStat != "" {
				if sec := sectionOf(t, res.doc, tc.phase); sec.Status != tc.wantStat {
					t.Fatalf("status %s, want %s", sec.Status, tc.wantStat)
				}
			}
		})
	}
}

func TestPhaseCommandConfigErrors(t *testing.T) {
	t.Parallel()
	problems := config.Problems{{File: "cluster.yaml", Path: "controlplane.count", Message: "must be at least 1"}}
	res := run(t, &fakePhase{name: "image"}, "", problems, "plan")
	if res.code != cli.ExitUsage {
		t.Fatalf("exit %d, want 2", res.code)
	}
	sec := sectionOf(t, res.doc, "image")
	if sec.Status != state.StatusFailed || sec.Error == nil || len(sec.Error.Problems) != 1 ||
		!strings.Contains(sec.Error.Problems[0], "controlplane.count") {
		t.Fatalf("section = %+v", sec)
	}
	if res = run(t, &fakePhase{name: "image"}, "", nil, "check"); !res.loadOpt.MissingIncludesOK || res.loadOpt.NeedCredentials {
		t.Fatalf("check must load without credentials: %+v", res.loadOpt)
	}
	if res = run(t, &fakePhase{name: "image"}, "", nil, "converge"); !res.loadOpt.NeedCredentials {
		t.Fatalf("converge must need credentials: %+v", res.loadOpt)
	}
}

func TestOrder(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff([]string{"nodes", "net", "image"}, phase.OrderFor(phase.ActionDestroy)); diff != "" {
		t.Fatal(diff)
	}
	if diff := cmp.Diff([]string{"image", "net"}, phase.Upstream("nodes", phase.ActionConverge)); diff != "" {
		t.Fatal(diff)
	}
	if got := phase.Upstream("nodes", phase.ActionDestroy); len(got) != 0 {
		t.Fatalf("nodes has no upstream in destroy: %v", got)
	}
}

// TestTestKnobsWarn: a phase binary warns on stderr, on every run, while a
// test-only knob is set, and says nothing of it otherwise.
func TestTestKnobsWarn(t *testing.T) {
	t.Parallel()
	const (
		scale   = "WARNING: TALOSC_TIME_SCALE=0.05 is set: a test-only knob that multiplies every wait budget and poll interval, safety waits included; unset it (export -n TALOSC_TIME_SCALE) for a real cluster"
		timeout = "WARNING: TALOSC_PLUGIN_TIMEOUT=2s is set: a test-only knob that replaces every plugin hook's timeout; unset it (export -n TALOSC_PLUGIN_TIMEOUT) for a real cluster"
	)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"unset", nil, nil},
		{"empty", map[string]string{phase.EnvTimeScale: "", plugin.EnvTimeout: ""}, nil},
		{"time scale", map[string]string{phase.EnvTimeScale: "0.05"}, []string{scale}},
		{"both", map[string]string{phase.EnvTimeScale: "0.05", plugin.EnvTimeout: "2s"}, []string{scale, timeout}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, action := range []string{"plan", "status"} {
				res := runEnv(t, &fakePhase{name: "image"}, tc.env, "", nil, action)
				var got []string
				for line := range strings.Lines(res.stderr) {
					if strings.Contains(line, "test-only") {
						got = append(got, strings.TrimSuffix(line, "\n"))
					}
				}
				if d := cmp.Diff(tc.want, got); d != "" || res.code != 0 {
					t.Errorf("%s: exit %d, warnings (-want +got):\n%s", action, res.code, d)
				}
			}
		})
	}
}
