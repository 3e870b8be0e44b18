package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// scriptPlugin writes body as tc-NAME in a temp dir and returns the plugin.
func scriptPlugin(t *testing.T, name, body string, hooks ...string) plugin.Plugin {
	t.Helper()
	if len(hooks) == 0 {
		hooks = []string{"configured", "converge", "status", "check"}
	}
	path := filepath.Join(t.TempDir(), "tc-"+name)
	writeFile(t, path, body, 0o755)
	return plugin.Plugin{Descriptor: plugin.Descriptor{Name: name, Version: "1", Hooks: hooks}, Path: path}
}

// succeeded is a section a script writes.
const succeeded = `{"status":"succeeded","producer":"tc-x","outputs":{"ran":true}}`

// foreign is another phase's section, already in the document.
const foreign = `{"status":"succeeded","producer":"tc-net/1","outputs":{"id":"net-1"}}`

func hookErr(t *testing.T, err error) *plugin.HookError {
	t.Helper()
	var he *plugin.HookError
	if !errors.As(err, &he) {
		t.Fatalf("error = %v, want a *plugin.HookError", err)
	}
	return he
}

func TestCallSuccess(t *testing.T) {
	t.Parallel()
	// The script also proves what it got: flags, environment, stderr.
	pl := scriptPlugin(t, "good", sectionScript("good", succeeded, `
echo "args: $*" >&2
printf 'name=%s api=%s base=%s' "$TALOSC_PLUGIN_NAME" "$TALOSC_STATE_API" "$BASE" >&2`))
	var stderr bytes.Buffer
	r := &plugin.Runner{Env: []string{"BASE=yes", "PATH=" + os.Getenv("PATH")}, Stderr: &stderr}
	in := doc(t, map[string]string{"net": foreign})

	out, sec, err := r.Call(t.Context(), pl, plugin.HookConverge, in, plugin.CallOptions{DryRun: true, Yes: true})
	if err != nil {
		t.Fatalf("Call() error = %v", err)
	}
	if sec.Status != state.StatusSucceeded || string(sec.Outputs) != `{"ran":true}` {
		t.Errorf("section = %+v", sec)
	}
	if changed := state.ChangedOtherThan(in, out, "good"); len(changed) != 0 {
		t.Errorf("sections changed besides good: %v", changed)
	}
	if _, ok := out.Sections["good"]; !ok || out.Cluster != "demo" || out.Action != "converge" {
		t.Errorf("document = %+v", out)
	}
	if diff := cmp.Diff([]string{"net", "good"}, out.Order); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	if _, ok := in.Sections["good"]; ok {
		t.Error("Call modified its input document")
	}
	want := "[good] args: converge --dry-run --yes\n[good] name=good api=" + state.APIVersion + " base=yes\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}

func TestCallFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		wantCode int
		wantErr  string
	}{
		{"crash exit 3", "#!/bin/sh\necho dying >&2\nexit 3\n", 3, "wrote no state document (exit status 3)"},
		{"bad json", "#!/bin/sh\ncat >/dev/null\necho '{not json'\n", 0, "wrote invalid state"},
		{"two documents", "#!/bin/sh\nin=$(cat)\necho \"$in\"; echo \"$in\"\n", 0, "more than one JSON document"},
		{"empty output", "#!/bin/sh\ncat >/dev/null\n", 0, "wrote no state document"},
		{
			"changed a foreign section",
			"#!/bin/sh\ncat | sed -e 's|net-1|net-2|' -e 's|\"sections\":{|\"sections\":{\"bad\":" + succeeded + ",|'\n",
			0, "plugin bad changed section net it does not own",
		},
		{
			"dropped a foreign section",
			"#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '{\"apiVersion\":\"" + state.APIVersion + "\",\"kind\":\"ClusterState\",\"cluster\":\"demo\",\"action\":\"converge\",\"sections\":{\"bad\":" + succeeded + "}}'\n",
			0, "plugin bad changed section net it does not own",
		},
		{"no own section", "#!/bin/sh\ncat\n", 0, `plugin bad wrote no "bad" section`},
		{
			"changed the cluster",
			"#!/bin/sh\ncat | sed -e 's|\"cluster\":\"demo\"|\"cluster\":\"other\"|' -e 's|\"sections\":{|\"sections\":{\"bad\":" + succeeded + ",|'\n",
			0, "changed the document's cluster or action",
		},
		{
			"wrong apiVersion",
			"#!/bin/sh\ncat | sed -e 's|" + state.APIVersion + "|talosc.dev/v0|'\n",
			0, "talosc.dev/v0",
		},
		{
			"unknown status",
			sectionScript("bad", `{"status":"great","producer":"tc-bad"}`, ""),
			0, `section status "great"`,
		},
		{
			"failed section with exit 0",
			sectionScript("bad", `{"status":"failed","producer":"tc-bad","error":{"message":"it broke"}}`, ""),
			0, "it broke",
		},
		{
			"valid document, non-zero exit",
			sectionScript("bad", succeeded, "") + "exit 4\n",
			4, "exit status 4",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pl := scriptPlugin(t, "bad", tt.body)
			in := doc(t, map[string]string{"net": foreign})
			r := &plugin.Runner{}
			out, sec, err := r.Call(t.Context(), pl, plugin.HookConverge, in, plugin.CallOptions{})
			he := hookErr(t, err)
			if he.Plugin != "bad" || he.Hook != "converge" || he.ExitCode != tt.wantCode {
				t.Errorf("HookError = %+v, want plugin bad, hook converge, exit code %d", he, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "plugin bad failed during converge: ") {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
			if sec.Status != state.StatusFailed || sec.Error == nil || sec.Error.Message == "" {
				t.Errorf("section = %+v, want failed with a message", sec)
			}
			got, ok, derr := out.Section("bad")
			if derr != nil || !ok || got.Status != state.StatusFailed {
				t.Errorf("document section bad = %+v (present %t, %v), want failed", got, ok, derr)
			}
			if changed := state.ChangedOtherThan(in, out, "bad"); len(changed) != 0 {
				t.Errorf("the refused output leaked into the document: %v changed", changed)
			}
		})
	}
}

func TestCallValidateRefusalKeepsProblems(t *testing.T) {
	t.Parallel()
	pl := scriptPlugin(t, "v", sectionScript("v",
		`{"status":"failed","producer":"tc-v","error":{"message":"invalid v configuration","problems":["v.x: unknown key"]}}`, "")+"exit 2\n")
	_, sec, err := (&plugin.Runner{}).Call(t.Context(), pl, plugin.HookValidate, doc(t, nil), plugin.CallOptions{})
	if he := hookErr(t, err); he.ExitCode != 2 {
		t.Errorf("exit code = %d, want 2", he.ExitCode)
	}
	if sec.Error == nil || !cmp.Equal(sec.Error.Problems, []string{"v.x: unknown key"}) {
		t.Errorf("section error = %+v, want the plugin's problems", sec.Error)
	}
	if want := "plugin v failed during validate: invalid v configuration (exit status 2)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestCallTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	pl := scriptPlugin(t, "slow", "#!/bin/sh\nsleep 30 &\necho $! > "+pidFile+"\nwait\n")
	// 3s leaves a loaded machine time to start the script and write the pid.
	r := &plugin.Runner{Env: append(os.Environ(), plugin.EnvTimeout+"=3s")}
	start := time.Now()
	_, sec, err := r.Call(t.Context(), pl, plugin.HookConverge, doc(t, nil), plugin.CallOptions{})
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Errorf("Call took %s; want about 3s", elapsed)
	}
	he := hookErr(t, err)
	if he.ExitCode != -1 || !strings.Contains(err.Error(), "timed out after 3s") {
		t.Errorf("error = %v (exit code %d), want a timeout", err, he.ExitCode)
	}
	if sec.Status != state.StatusFailed || !strings.Contains(sec.Error.Message, "timed out") {
		t.Errorf("section = %+v, want failed with the timeout", sec)
	}
	data, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if !gone(pid, 3*time.Second) {
		t.Errorf("the plugin's child %d outlived the timeout", pid)
	}
}

// gone waits until pid no longer runs (it is reaped or a zombie).
func gone(pid int, wait time.Duration) bool {
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if fields := strings.Fields(string(stat)); len(fields) > 2 && fields[2] == "Z" {
				return true
			}
		}
	}
	return false
}

func TestCallTimeoutFromRunner(t *testing.T) {
	t.Parallel()
	pl := scriptPlugin(t, "slow", "#!/bin/sh\nsleep 30\n")
	var asked []string
	r := &plugin.Runner{Timeout: func(hook string) time.Duration { asked = append(asked, hook); return 200 * time.Millisecond }}
	_, _, err := r.Call(t.Context(), pl, plugin.HookStatus, nil, plugin.CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "timed out after 200ms") {
		t.Errorf("error = %v, want a 200ms timeout", err)
	}
	if !cmp.Equal(asked, []string{"status"}) {
		t.Errorf("Timeout asked for %v", asked)
	}
}

func TestCallCancelled(t *testing.T) {
	t.Parallel()
	pl := scriptPlugin(t, "slow", "#!/bin/sh\nsleep 30\n")
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, sec, err := (&plugin.Runner{}).Call(ctx, pl, plugin.HookConverge, nil, plugin.CallOptions{})
	if time.Since(start) > 5*time.Second || sec.Status != state.StatusFailed {
		t.Errorf("Call after %s: section %+v", time.Since(start), sec)
	}
	if !errors.Is(err, ctx.Err()) {
		t.Errorf("error = %v, want it to wrap %v", err, ctx.Err())
	}
}

func TestRunAllContainsFailures(t *testing.T) {
	t.Parallel()
	// a fails; b still runs and sees what ran before it; c checks b's output
	// reached it; d lacks the hook and is skipped.
	a := scriptPlugin(t, "a", "#!/bin/sh\ncat >/dev/null\necho broken >&2\nexit 3\n")
	b := scriptPlugin(t, "b", sectionScript("b", `{"status":"succeeded","producer":"tc-b","outputs":{"clusterId":"c-123"}}`, ""))
	c := scriptPlugin(t, "c", `#!/bin/sh
in=$(cat)
case "$in" in
  *'"clusterId":"c-123"'*) ;;
  *) echo "b's output is missing" >&2; exit 1 ;;
esac
case "$in" in
  *'"a":{"status":"failed"'*) ;;
  *) echo "a's failure is missing" >&2; exit 1 ;;
esac
printf '%s\n' "$in" | sed -e 's|"sections":{|"sections":{"c":{"status":"succeeded","producer":"tc-c"},|'
`)
	d := scriptPlugin(t, "d", "#!/bin/sh\necho must not run >&2\nexit 9\n", "configured", "converge")
	var stderr bytes.Buffer
	r := &plugin.Runner{Stderr: &stderr}
	out, err := r.RunAll(t.Context(), []plugin.Plugin{a, b, d, c}, plugin.HookCheck, doc(t, map[string]string{"net": foreign}), plugin.CallOptions{})

	he := hookErr(t, err)
	if he.Plugin != "a" || strings.Count(err.Error(), "plugin ") != 1 {
		t.Errorf("error = %v, want only a's failure", err)
	}
	statuses := map[string]state.Status{}
	for name := range out.Sections {
		s, _, _ := out.Section(name)
		statuses[name] = s.Status
	}
	want := map[string]state.Status{"net": "succeeded", "a": "failed", "b": "succeeded", "c": "succeeded"}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("section statuses mismatch (-want +got):\n%s\nstderr:\n%s", diff, stderr.String())
	}
	if diff := cmp.Diff([]string{"net", "a", "b", "c"}, out.Order); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr.String(), "[a] broken\n") || strings.Contains(stderr.String(), "must not run") {
		t.Errorf("stderr = %q", stderr.String())
	}
	var outputs map[string]string
	if err := json.Unmarshal(mustSection(t, out, "b").Outputs, &outputs); err != nil || outputs["clusterId"] != "c-123" {
		t.Errorf("b outputs = %v (%v)", outputs, err)
	}
}

func TestRunAllJoinsEveryFailure(t *testing.T) {
	t.Parallel()
	a := scriptPlugin(t, "a", "#!/bin/sh\nexit 1\n")
	b := scriptPlugin(t, "b", "#!/bin/sh\nexit 2\n")
	_, err := (&plugin.Runner{}).RunAll(t.Context(), []plugin.Plugin{a, b}, plugin.HookConverge, nil, plugin.CallOptions{})
	if err == nil || !strings.Contains(err.Error(), "plugin a failed") || !strings.Contains(err.Error(), "plugin b failed") {
		t.Errorf("error = %v, want both failures", err)
	}
}

func TestRunAllSuccess(t *testing.T) {
	t.Parallel()
	a := scriptPlugin(t, "a", sectionScript("a", succeeded, ""))
	out, err := (&plugin.Runner{}).RunAll(t.Context(), []plugin.Plugin{a}, plugin.HookConverge, nil, plugin.CallOptions{})
	if err != nil || mustSection(t, out, "a").Status != state.StatusSucceeded {
		t.Errorf("RunAll() = %v, %v", out, err)
	}
}

func mustSection(t *testing.T, d *state.Document, name string) state.Section {
	t.Helper()
	s, ok, err := d.Section(name)
	if err != nil || !ok {
		t.Fatalf("section %s: present %t, %v", name, ok, err)
	}
	return s
}
