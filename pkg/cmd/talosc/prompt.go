package talosc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/talosc/talosc/pkg/cli"
)

// confirm asks the user to type want. No answer (EOF) or an interrupt
// (Ctrl-C cancels ctx) is exit 130; a wrong answer aborts (exit 1).
// Nothing is done in any of these cases.
//
// The answer is read in a goroutine so that Ctrl-C ends the prompt at once:
// cli.Run turns SIGINT into a cancelled ctx, and a read blocked on a
// terminal would otherwise swallow it until Enter. The goroutine left
// blocked on stdin ends with the process.
func confirm(ctx context.Context, s cli.Streams, prompt, want string) error {
	fmt.Fprint(s.ErrOut, prompt)
	type answer struct {
		line string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		line, err := bufio.NewReader(s.In).ReadString('\n')
		answered <- answer{line, err}
	}()
	var a answer
	select {
	case <-ctx.Done():
		fmt.Fprintln(s.ErrOut)
		return &cli.ExitError{Code: cli.ExitInterrupted, Err: fmt.Errorf("%w at the prompt; nothing was done", cli.ErrInterrupted)}
	case a = <-answered:
	}
	if a.err != nil && (!errors.Is(a.err, io.EOF) || a.line == "") {
		fmt.Fprintln(s.ErrOut)
		return &cli.ExitError{Code: cli.ExitInterrupted, Err: fmt.Errorf("%w: no answer on stdin (use --yes in scripts); nothing was done", cli.ErrInterrupted)}
	}
	if strings.TrimSpace(a.line) != want {
		return &cli.ExitError{Code: cli.ExitFailure, Err: fmt.Errorf("aborted: the answer was not %q; nothing was done", want)}
	}
	return nil
}
