package talosc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/phase"
	"github.com/talosc/talosc/pkg/state"
)

// interruptGrace is how long a phase gets to write its partial state after
// an interrupt before it is killed.
const interruptGrace = 30 * time.Second

// pipeResult is what a pipeline of phases produced.
type pipeResult struct {
	doc *state.Document
	// code is the exit code of the first phase (in pipeline order) that
	// failed, 0 when all succeeded.
	code int
	// failed names that phase.
	failed string
}

// stage is one process of a pipeline: the binary of phase with args, the
// action first.
type stage struct {
	phase string
	args  []string
}

// runPhases runs the builtin phases for action as separate processes joined
// by pipes, exactly as "tc-nodes validate | tc-image converge | tc-net
// converge | tc-nodes converge" would, feeding in to the first: a plan or
// converge is headed by the whole-run validation, whose verdict the first
// phase carries on (a refusal fails that phase). Each phase's stderr
// streams to the user. A phase whose upstream failed skips its work, so the
// run stops at the first failing phase.
func (s *session) runPhases(ctx context.Context, action string, in *state.Document, extra ...string) (pipeResult, error) {
	var stages []stage
	if action == actionPlan || action == actionConverge {
		stages = append(stages, stage{phase.Nodes, phase.ValidateArgs(action, extra)})
	}
	for _, name := range phase.OrderFor(action) {
		stages = append(stages, stage{name, append([]string{action}, extra...)})
	}
	return s.runPipeline(ctx, stages, in)
}

// runPipeline runs stages, in that order, as runPhases does. The exit code
// and name of the first failing phase are those of the first failing
// stage but the validation, whose refusal the phase after it reports.
func (s *session) runPipeline(ctx context.Context, stages []stage, in *state.Document) (pipeResult, error) {
	cmds, err := s.commands(ctx, stages)
	if err != nil {
		return pipeResult{}, err
	}
	var input bytes.Buffer
	if err := state.Write(&input, in); err != nil {
		return pipeResult{}, err
	}
	cmds[0].Stdin = &input
	var last bytes.Buffer
	cmds[len(cmds)-1].Stdout = &last
	var closers []io.Closer
	for i := range len(cmds) - 1 {
		r, w, err := os.Pipe()
		if err != nil {
			return pipeResult{}, fmt.Errorf("pipe: %w", err)
		}
		cmds[i].Stdout, cmds[i+1].Stdin = w, r
		closers = append(closers, r, w)
	}
	started := 0
	var startErr error
	for _, cmd := range cmds {
		if startErr = cmd.Start(); startErr != nil {
			break
		}
		started++
	}
	for _, c := range closers { // the children hold their own copies
		_ = c.Close()
	}
	res := wait(stages, cmds[:started])
	if startErr != nil {
		return res, fmt.Errorf("start phase %s: %w", stages[started].phase, startErr)
	}
	doc, err := state.Parse(last.Bytes())
	if err != nil || doc == nil {
		return res, fmt.Errorf("phase %s wrote no usable state document: %w", stages[len(stages)-1].phase, errors.Join(err, errMissingDoc(doc)))
	}
	res.doc = doc
	return res, ctx.Err()
}

// commands are the stages' processes: each phase binary in the cluster's
// directory, its stderr the user's, interrupted (not killed) when ctx ends,
// and dying with talosc.
func (s *session) commands(ctx context.Context, stages []stage) ([]*exec.Cmd, error) {
	cmds := make([]*exec.Cmd, len(stages))
	for i, st := range stages {
		path, err := s.phasePath(st.phase)
		if err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, path, append([]string{st.args[0], "-C", s.dir}, st.args[1:]...)...)
		cmd.Env = s.env
		cmd.Stderr = s.g.Streams.ErrOut
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = interruptGrace
		cli.DieWithParent(cmd)
		cmds[i] = cmd
	}
	return cmds, nil
}

// wait waits for every started process and names the first failing stage
// but the validation, whose refusal the phase after it reports.
func wait(stages []stage, started []*exec.Cmd) pipeResult {
	res := pipeResult{}
	for i, cmd := range started {
		code := exitCode(cmd.Wait())
		if code != 0 && res.code == 0 && stages[i].args[0] != phase.ActionValidate {
			res.code, res.failed = code, stages[i].phase
		}
	}
	return res
}

func errMissingDoc(doc *state.Document) error {
	if doc == nil {
		return errors.New("stdout was empty")
	}
	return nil
}

// exitCode maps a Wait error to a process exit code.
func exitCode(err error) int {
	if err == nil {
		return cli.ExitOK
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() > 0 {
		return ee.ExitCode()
	}
	return cli.ExitFailure
}
