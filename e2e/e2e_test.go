// Package e2e runs the real talosc binaries (the front door, the phases and
// the bundled plugins) under testscript: pipes, plugin discovery, exit codes
// and the stdout/stderr split are tested the way a user meets them.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/cmd/talosc"
	"github.com/talosc/talosc/pkg/cmd/tcargocd"
	"github.com/talosc/talosc/pkg/cmd/tcimage"
	"github.com/talosc/talosc/pkg/cmd/tcnet"
	"github.com/talosc/talosc/pkg/cmd/tcnodes"
	"github.com/talosc/talosc/pkg/cmd/tcrancher"
	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/planfile"
	"github.com/talosc/talosc/pkg/state"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kubectl-talosc": func() { s := cli.StdStreams(); os.Exit(cli.Run(talosc.NewRoot(s), os.Args[1:], s)) },
		"tc-image":       func() { s := cli.StdStreams(); os.Exit(cli.Run(tcimage.NewCommand(s, nil), os.Args[1:], s)) },
		"tc-net":         func() { s := cli.StdStreams(); os.Exit(cli.Run(tcnet.NewCommand(s, nil), os.Args[1:], s)) },
		"tc-nodes":       func() { s := cli.StdStreams(); os.Exit(cli.Run(tcnodes.NewCommand(s, nil), os.Args[1:], s)) },
		// The bundled plugins are installed under other names and linked
		// into $WORK/bin by the scripts that want them, so that every other
		// script runs with no plugin on PATH.
		"bundled-rancher": func() { s := cli.StdStreams(); os.Exit(cli.Run(tcrancher.NewCommand(s), os.Args[1:], s)) },
		"bundled-argocd":  func() { s := cli.StdStreams(); os.Exit(cli.Run(tcargocd.NewCommand(s), os.Args[1:], s)) },
		"fakeplugin": func() {
			s := cli.StdStreams()
			os.Exit(cli.Run(newFakePlugin(s, os.Getenv("FAKEPLUGIN_NAME")), os.Args[1:], s))
		},
	})
}

// labs counts the scripts' labs across both script tests.
var labs atomic.Int32

// TestScripts runs the lab scripts, as many at once as -parallel allows.
// It is not itself parallel, so the real-cloud scripts after it start only
// once every lab script has ended.
func TestScripts(t *testing.T) {
	testscript.Run(t, scriptParams("testdata/script"))
}

// TestRealCloudScripts runs the scripts against a real OpenStack on their
// own, after the lab scripts (TestScripts, above it, returns only when all
// of them have ended), when the other packages' tests have long ended too:
// a loopback OpenStack on a small machine shared with a dozen labs
// answered too slowly to build a server (CI: "Failed to allocate the
// network(s)"; nodes never booted), and when they ran first, beside the
// other packages' tests starting from a warm build cache, nova-api
// answered every server create after the 10 s request timeout and the
// servers stayed in BUILD. They run one at a time too: beside
// real_openstack_late, real_openstack failed once, nova-api (load 14)
// answering lists after more than the tests' 10 s request timeout five
// times in a row. They skip without one.
func TestRealCloudScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/realcloud/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no real-cloud scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txtar"), func(t *testing.T) {
			p := scriptParams("")
			p.Files = []string{f}
			testscript.Run(t, p)
		})
	}
}

// scriptParams are the scripts' commands, conditions and environment.
func scriptParams(dir string) testscript.Params {
	return testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("UPDATE_GOLDEN") != "",
		Condition:           condition,
		Setup: func(env *testscript.Env) error {
			// Put $WORK/bin first on PATH for script plugins, and tell the
			// scripts where the linkable commands live.
			bin := filepath.Join(env.WorkDir, "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				return err
			}
			path := env.Getenv("PATH")
			env.Setenv("PATH", bin+string(os.PathListSeparator)+path)
			for _, name := range []string{"bundled-rancher", "bundled-argocd", "fakeplugin"} {
				p, err := lookIn(path, name)
				if err != nil {
					return err
				}
				env.Setenv(envName(name), p)
			}
			env.Setenv("NO_COLOR", "1")
			// Nothing may leave loopback: the default Image Factory and
			// kubelet registry are on the internet, so every request for
			// a host off loopback goes to a proxy on a refused port (Go
			// never proxies loopback; a lab's cluster.yaml names its own
			// factory).
			env.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
			env.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
			env.Setenv(kubeapi.EnvBinary, os.Getenv(kubeapi.EnvBinary))
			env.Values[labKey{}] = newScriptLab(&labs)
			env.Values[untrustedKey{}] = new(atomic.Pointer[untrustedServer])
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":       cmdExitCode,
			"filemode":       cmdFileMode,
			"kept-identity":  cmdKeptIdentity,
			"statedoc":       cmdStateDoc,
			"plans":          cmdPlans,
			"install-plugin": cmdInstallPlugin,
			"lab":            cmdLab,
			"replace":        cmdReplace,
			"untrusted-tls":  cmdUntrustedTLS,
			"build-example":  cmdBuildExample,
			"certs-match":    cmdCertsMatch,
			"textfile":       cmdTextfile,
		},
	}
}

func envName(cmd string) string {
	switch cmd {
	case "bundled-rancher":
		return "RANCHER_PLUGIN"
	case "bundled-argocd":
		return "ARGOCD_PLUGIN"
	default:
		return "FAKE_PLUGIN"
	}
}

func lookIn(path, name string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found on PATH", name)
}

// cmdExitCode runs "exitcode N prog args..." and asserts prog exits with N.
// Its stdout and stderr are kept for the stdout/stderr commands that follow.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d\nstderr:\n%s", args[1], got, want, ts.ReadFile("stderr"))
	}
}

// cmdFileMode runs "filemode FILE MODE" (octal permission bits).
func cmdFileMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: filemode FILE MODE")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	if got := fi.Mode().Perm(); (got == fs.FileMode(want)) == neg {
		ts.Fatalf("%s has mode %#o, want %s%#o", args[0], got, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// cmdKeptIdentity runs "kept-identity DIR N [FILE]": DIR holds exactly N
// identities a destroy kept (talossecrets.yaml.destroyed-*), each mode
// 0600, and no talossecrets.yaml when N > 0; with FILE, the newest kept
// one holds FILE's content.
func cmdKeptIdentity(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: kept-identity DIR N [FILE]")
	}
	kept, err := filepath.Glob(filepath.Join(ts.MkAbs(args[0]), "talossecrets.yaml.destroyed-*"))
	ts.Check(err)
	if want, err := strconv.Atoi(args[1]); err != nil || len(kept) != want {
		ts.Fatalf("kept identities %v, want %s", kept, args[1])
	}
	for _, k := range kept {
		fi, err := os.Stat(k)
		ts.Check(err)
		if fi.Mode().Perm() != 0o600 {
			ts.Fatalf("%s has mode %#o, want 0600", k, fi.Mode().Perm())
		}
	}
	if len(kept) > 0 {
		if _, err := os.Stat(filepath.Join(ts.MkAbs(args[0]), "talossecrets.yaml")); err == nil {
			ts.Fatalf("talossecrets.yaml is still in %s", args[0])
		}
	}
	if len(args) == 3 && len(kept) > 0 && ts.ReadFile(kept[len(kept)-1]) != ts.ReadFile(args[2]) {
		ts.Fatalf("%s is not %s", kept[len(kept)-1], args[2])
	}
}

// cmdStateDoc runs "statedoc FILE [SECTION=STATUS...]": FILE holds exactly one
// valid state document (nothing else) whose sections have those statuses.
func cmdStateDoc(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: statedoc FILE [SECTION=STATUS...]")
	}
	doc, err := state.Parse([]byte(ts.ReadFile(args[0])))
	if err != nil || doc == nil {
		ts.Fatalf("%s is not exactly one state document: %v", args[0], err)
	}
	for _, want := range args[1:] {
		name, status, ok := strings.Cut(want, "=")
		if !ok {
			ts.Fatalf("statedoc: %q is not SECTION=STATUS", want)
		}
		sec, present, err := doc.Section(name)
		ts.Check(err)
		switch {
		case status == "absent" && present:
			ts.Fatalf("section %s is present, want absent", name)
		case status == "absent":
		case !present:
			ts.Fatalf("section %s is absent, want %s", name, status)
		case string(sec.Status) != status:
			ts.Fatalf("section %s is %s, want %s", name, sec.Status, status)
		}
	}
}

// cmdPlans runs "plans FILE N": the state document in FILE lists N changes
// over all its sections, planned or made (a converge that changed nothing
// lists none).
func cmdPlans(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: plans FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	data := []byte(ts.ReadFile(args[0]))
	var changes []string
	if plan, err := readPlan(data); err == nil {
		for _, a := range plan.Actions {
			changes = append(changes, fmt.Sprintf("\n  %s: %s %s/%s %s", a.Section, a.Action, a.Kind, a.Name, a.Detail))
		}
		if len(changes) != n {
			ts.Fatalf("%s lists %d actions, want %d:%s", args[0], len(changes), n, strings.Join(changes, ""))
		}
		return
	}
	doc, err := state.Parse(data)
	if err != nil || doc == nil {
		ts.Fatalf("%s is not exactly one state or plan document: %v", args[0], err)
	}
	for _, name := range doc.Names() {
		sec, _, err := doc.Section(name)
		ts.Check(err)
		for _, c := range sec.Plan {
			changes = append(changes, fmt.Sprintf("\n  %s: %s %s/%s %s", name, c.Action, c.Kind, c.Name, c.Detail))
		}
	}
	if len(changes) != n {
		ts.Fatalf("%s lists %d changes, want %d:%s", args[0], len(changes), n, strings.Join(changes, ""))
	}
}

// readPlan decodes a plan document (plan -o json).
func readPlan(data []byte) (planfile.Document, error) {
	var d planfile.Document
	if err := json.Unmarshal(data, &d); err != nil {
		return d, err
	}
	if d.Kind != planfile.Kind || d.APIVersion != state.APIVersion {
		return d, fmt.Errorf("not a plan document: apiVersion %q kind %q", d.APIVersion, d.Kind)
	}
	return d, nil
}

// cmdInstallPlugin runs "install-plugin NAME TARGET [DIR]": it installs
// DIR/tc-NAME (DIR defaults to $WORK/bin) as a script running TARGET, one of
// the commands this test binary provides, with FAKEPLUGIN_NAME=NAME. (A
// symlink would not do: the test binary picks the command by its own name.)
func cmdInstallPlugin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: install-plugin NAME TARGET [DIR]")
	}
	dir := ts.MkAbs("bin")
	if len(args) == 3 {
		dir = ts.MkAbs(args[2])
	}
	ts.Check(os.MkdirAll(dir, 0o755))
	script := fmt.Sprintf("#!/bin/sh\nFAKEPLUGIN_NAME=%s exec '%s' \"$@\"\n", args[0], args[1])
	ts.Check(os.WriteFile(filepath.Join(dir, "tc-"+args[0]), []byte(script), 0o755))
}

// cmdBuildExample runs "build-example NAME": it builds the example plugin
// examples/tc-NAME with go build into $WORK/bin, which is on PATH, as a
// plugin author would install theirs.
func cmdBuildExample(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: build-example NAME")
	}
	cmd := exec.CommandContext(context.Background(), "go", "build", "-o", ts.MkAbs(filepath.Join("bin", "tc-"+args[0])), "./examples/tc-"+args[0])
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		ts.Fatalf("go build examples/tc-%s: %v\n%s", args[0], err, out)
	}
}

// cmdReplace runs "replace FILE OLD NEW": it replaces the one occurrence of
// OLD in FILE by NEW, where both may hold \n for a newline (scripts edit
// the cluster.yaml a lab wrote, whose URLs only the lab knows).
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace FILE OLD NEW")
	}
	file := ts.MkAbs(args[0])
	data := ts.ReadFile(args[0])
	old, repl := strings.ReplaceAll(args[1], `\n`, "\n"), strings.ReplaceAll(args[2], `\n`, "\n")
	if n := strings.Count(data, old); n != 1 {
		ts.Fatalf("replace: %q occurs %d times in %s, want once", old, n, args[0])
	}
	ts.Check(os.WriteFile(file, []byte(strings.Replace(data, old, repl, 1)), 0o600))
}
