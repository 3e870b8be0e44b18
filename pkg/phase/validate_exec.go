package phase

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/talosc/talosc/pkg/plugin"
	"github.com/talosc/talosc/pkg/state"
)

// ExecValidator validates the run by running "tc-nodes validate" (next to
// this binary, else on PATH) on the run's document: the nodes phase links
// everything validating a live cluster needs (Talos, Kubernetes), so the
// image and net phases stay small. Its progress goes to stderr; a refusal
// comes back as the error it made there (a scale-down's question as a
// ConfirmError).
func ExecValidator(ctx context.Context, in *Input) (*Validated, error) {
	bin, err := nodesBinary()
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
	var stdin, stdout bytes.Buffer
	if err := state.Write(&stdin, in.State); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &stdin, &stdout, in.ErrOut
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
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
		return nil, &ConfirmError{Prompt: sec.Error.Confirm}
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
func nodesBinary() (string, error) {
	name := plugin.Prefix + Nodes
	if dir := plugin.SelfDir(); dir != "" {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("validating the run needs %s (beside this binary or on PATH): %w; reinstall talosc", name, err)
	}
	return p, nil
}
