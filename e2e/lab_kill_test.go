package e2e

import (
	"context"
	"errors"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosc/talosc/pkg/lab/kubeapi"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/phase"
)

// killAt runs a command in a process group of its own and SIGKILLs the
// whole group (the front door and every phase it started) in the middle
// of a call: when the lab sees the chosen request arrive, before the
// service handles it. The request then goes on to be applied, its answer
// going nowhere, as when a laptop sleeps or a CI runner is OOM-killed.
//
//	lab kill-at N CMD ARGS...              at the Nth mutating request (as
//	                                       "lab mutations" counts them)
//	lab kill-at random SEED MAX CMD ARGS...
//	                                       at the Nth, N drawn from SEED
//	                                       in 1..MAX
//	lab kill-at call SERVICE PREFIX CMD ARGS...
//	                                       at the first request (read or
//	                                       not) of SERVICE whose path
//	                                       starts with PREFIX ("METHOD
//	                                       /path" takes only METHOD)
//
// The command must be killed: one that ends first fails the script (the
// kill point was past the end of the run). Its stdout and stderr are the
// script's afterwards, with the kill point logged.
func (s *scriptLab) killAt(ts *testscript.TestScript, args []string) {
	const usage = "usage: lab kill-at N | random SEED MAX | call SERVICE PREFIX -- CMD ARGS..."
	if len(args) < 2 {
		ts.Fatalf(usage)
	}
	var trigger func(labnet.Call) bool
	var what string
	switch args[0] {
	case "random":
		if len(args) < 4 {
			ts.Fatalf(usage)
		}
		maxN, err := strconv.Atoi(args[2])
		ts.Check(err)
		n := 1 + int(seeded(args[1])%uint64(maxN)) //nolint:gosec // a small positive count
		trigger, what = nthMutation(n), "mutating request #"+strconv.Itoa(n)+" (seed "+args[1]+")"
		args = args[3:]
	case "call":
		if len(args) < 4 {
			ts.Fatalf(usage)
		}
		svc, prefix := args[1], args[2]
		method, p, ok := strings.Cut(prefix, " ")
		if ok {
			prefix = p
		}
		trigger = func(c labnet.Call) bool {
			return c.Service == svc && (!ok || c.Method == method) && strings.HasPrefix(c.Path, prefix)
		}
		what = "the first " + svc + " " + prefix + " call"
		args = args[3:]
	default:
		n, err := strconv.Atoi(args[0])
		ts.Check(err)
		trigger, what = nthMutation(n), "mutating request #"+args[0]
		args = args[1:]
	}
	if len(args) == 0 {
		ts.Fatalf(usage)
	}
	cmd := s.groupCommand(ts, args)
	var once sync.Once
	killed := make(chan labnet.Call, 1)
	rec := s.lab.Recorder()
	rec.OnArrival(func(c labnet.Call) {
		if !trigger(c) {
			return
		}
		once.Do(func() {
			killed <- c // before the kill: Wait may return at once
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		})
	})
	defer rec.OnArrival(nil)
	err := cmd.Wait()
	select {
	case c := <-killed:
		ts.Logf("killed the process group of %s at %s: %s %s %s", args[0], what, c.Service, c.Method, c.Path)
	default:
		ts.Fatalf("%s ended (%v) before %s: nothing was killed", args[0], err, what)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		ts.Fatalf("%s: %v, want killed by SIGKILL", args[0], err)
	}
	// The group's other members (phases) die with it; wait until none is
	// left, so a rerun never races a survivor.
	for range 500 {
		if syscall.Kill(-cmd.Process.Pid, 0) != nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("the process group of %s outlived its SIGKILL", args[0])
}

// nthMutation triggers on the nth mutating request.
func nthMutation(n int) func(labnet.Call) bool {
	var mu sync.Mutex
	seen := 0
	return func(c labnet.Call) bool {
		if !c.Mutating() || onlyLooksLikeChange(c) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		seen++
		return seen == n
	}
}

// seeded is a replayable number drawn from a seed's text.
func seeded(seed string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("kill-at " + seed))
	return h.Sum64()
}

// groupCommand starts args in the script's environment and directory, in
// a new process group, with its output in the script's stdout and stderr
// files.
func (s *scriptLab) groupCommand(ts *testscript.TestScript, args []string) *exec.Cmd {
	path, err := lookIn(ts.Getenv("PATH"), args[0])
	ts.Check(err)
	cmd := exec.CommandContext(context.Background(), path, args[1:]...) // killed by the lab or at the script's end
	cmd.Dir = ts.MkAbs(".")
	cmd.Env = scriptEnv(ts)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := os.Create(filepath.Join(ts.Getenv("WORK"), "stdout"))
	ts.Check(err)
	stderr, err := os.Create(filepath.Join(ts.Getenv("WORK"), "stderr"))
	ts.Check(err)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ts.Check(cmd.Start())
	ts.Defer(func() {
		_ = stdout.Close()
		_ = stderr.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	return cmd
}

// scriptEnv is the environment the script's own exec would give a
// command: the process's, with every variable the harness or the lab sets
// as the script has it.
func scriptEnv(ts *testscript.TestScript) []string {
	keys := []string{
		"PATH", "HOME", "WORK", "TMPDIR", "NO_COLOR", "CLUSTER_NET",
		"RANCHER_PLUGIN", "ARGOCD_PLUGIN", "FAKE_PLUGIN",
		"LAB_FACTORY", "HTTP_PROXY", "HTTPS_PROXY", phase.EnvTimeScale, kubeapi.EnvBinary,
	}
	env := make([]string, 0, len(keys)+len(os.Environ()))
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keys = append(keys, k)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if v := ts.Getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// keep copies FILE aside (as FILE.kept) when it exists; kept checks that
// FILE is byte for byte what keep saw, when keep saw one.
//
//	lab keep FILE
//	lab kept FILE
func keepFile(ts *testscript.TestScript, args []string, check bool) {
	if len(args) != 1 {
		ts.Fatalf("usage: lab keep|kept FILE")
	}
	path := ts.MkAbs(args[0])
	kept, err := os.ReadFile(path + ".kept")
	if check {
		switch {
		case errors.Is(err, os.ErrNotExist):
			ts.Logf("%s did not exist when kept", args[0])
		case err != nil:
			ts.Fatalf("%v", err)
		case ts.ReadFile(args[0]) != string(kept):
			ts.Fatalf("%s changed since it was kept", args[0])
		}
		return
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.Remove(path + ".kept"); err != nil && !errors.Is(err, os.ErrNotExist) {
			ts.Fatalf("%v", err)
		}
		return
	}
	ts.Check(err)
	ts.Check(os.WriteFile(path+".kept", data, 0o600))
}
