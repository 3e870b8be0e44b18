package phase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/talosc/talosc/pkg/cli"
	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// validateGrace is how long an interrupted validation gets to write its
// document.
const validateGrace = 10 * time.Second

// ExecValidator validates the run by running "tc-nodes validate" (next to
// this binary, else on PATH) on the run's document: the nodes phase links
// everything validating a live cluster needs (Talos, Kubernetes), so the
// image and net phases stay small. Its progress goes to stderr; a refusal
// comes back as the error it made there (a scale-down's question as a
// ConfirmError).
func ExecValidator(ctx context.Context, in *Input) (*Validated, error) {
	bin, err := nodesBinary(in)
	if err != nil {
		return nil, err
	}
	args := []string{ActionValidate, "-C", in.Config.Dir}
	if in.DryRun {
		args = append(args, "--dry-run")
	}
	if in.Yes {
		args = append(args, "--yes")
	}
	if len(in.Confirmed) > 0 {
		args = append(args, "--confirmed="+strings.Join(in.Confirmed, ","))
	}
	var stdin, stdout bytes.Buffer
	if err := state.Write(&stdin, in.State); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// The child's own "ERROR:" line is left out: its error comes back
	// here and this phase reports it once.
	stderr := &withoutErrors{w: in.ErrOut}
	defer stderr.flush()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &stdin, &stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = validateGrace
	cli.DieWithParent(cmd) // a killed phase leaves no validation running
	runErr := cmd.Run()
	doc, perr := state.Parse(stdout.Bytes())
	if perr != nil || doc == nil {
		return nil, fmt.Errorf("%s validate wrote no state document: %w", bin, errors.Join(runErr, perr))
	}
	sec, ok, err := doc.Section(Nodes)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, fmt.Errorf("%s validate wrote no %s section: %w", bin, Nodes, runErr)
	case sec.Error != nil && sec.Error.Confirm != "":
		return nil, &ConfirmError{Prompt: sec.Error.Confirm, Names: sec.Error.Confirming}
	case sec.Error != nil:
		return nil, errors.New(sec.Error.Message)
	case runErr != nil:
		return nil, fmt.Errorf("%s validate: %w", bin, runErr)
	}
	fact, _, err := state.Outputs[Validated](doc, Nodes)
	if err != nil {
		return nil, err
	}
	return &fact, nil
}

// nodesBinary is the tc-nodes beside this binary, else the one on PATH.
func nodesBinary(in *Input) (string, error) {
	self, _ := os.Executable()
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	path, _ := in.Env.lookup("PATH")
	p, err := plugin.Sibling(plugin.Prefix+Nodes, self, path)
	if err != nil {
		return "", fmt.Errorf("validating the run needs %w", err)
	}
	return p, nil
}

// withoutErrors passes whole lines on to w as they come, except the
// "ERROR: " lines.
type withoutErrors struct {
	w    io.Writer
	line []byte
}

func (e *withoutErrors) Write(p []byte) (int, error) {
	e.line = append(e.line, p...)
	for {
		i := bytes.IndexByte(e.line, '\n')
		if i < 0 {
			return len(p), nil
		}
		if line := e.line[:i+1]; !bytes.HasPrefix(line, []byte("ERROR: ")) {
			if _, err := e.w.Write(line); err != nil {
				return len(p), err
			}
		}
		e.line = e.line[i+1:]
	}
}

// flush writes what is left of a last line without its newline.
func (e *withoutErrors) flush() {
	if len(e.line) > 0 && !bytes.HasPrefix(e.line, []byte("ERROR: ")) {
		_, _ = e.w.Write(e.line)
	}
}
