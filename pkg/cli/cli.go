// Package cli holds the plumbing shared by every talosc binary: the streams a
// command writes to, the exit-code contract and the function that turns a cobra
// command's error into an exit code.
package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Streams is the only way a command reaches the terminal. Out carries machine
// output (the state document or an -o payload); ErrOut carries everything for
// humans.
type Streams = genericiooptions.IOStreams

// Exit codes shared by every talosc binary and documented in each --help.
const (
	// ExitOK means success.
	ExitOK = 0
	// ExitFailure means the command failed, or check found something needing
	// attention. Phases still print their (partial) state document.
	ExitFailure = 1
	// ExitUsage means bad flags or an invalid cluster.yaml; nothing was changed.
	ExitUsage = 2
	// ExitChanges is "plan --detailed-exitcode" finding changes to make (as
	// terraform's -detailed-exitcode says 2, which is taken here).
	ExitChanges = 3
	// ExitInterrupted means SIGINT/SIGTERM, or no answer to a confirmation prompt.
	ExitInterrupted = 130
)

// ExitCodesHelp is the exit-code table printed in every binary's long help.
const ExitCodesHelp = `Exit codes:
  0    success
  1    failure, or "check" found something that needs attention
  2    usage error or invalid cluster.yaml (nothing was changed)
  3    "plan --detailed-exitcode" only: changes are pending (0: nothing to do)
  130  interrupted, or a confirmation prompt got no answer`

// UsageError marks an error as the caller's fault: bad flags or invalid
// configuration. It maps to exit code 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

// Usage wraps err as a UsageError; nil stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &UsageError{Err: err}
}

// Usagef formats a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitError carries an explicit exit code, for example a plugin's or a phase's
// code passed through, or "check needs attention". When Silent is true the
// message was already shown to the user and is not printed again.
type ExitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *ExitError) Unwrap() error { return e.Err }

// Exit returns an ExitError that has already been reported to the user.
func Exit(code int) error {
	if code == ExitOK {
		return nil
	}
	return &ExitError{Code: code, Silent: true}
}

// ErrInterrupted is returned when the user interrupts or a prompt gets EOF.
var ErrInterrupted = errors.New("interrupted")

// StdStreams returns the process's standard streams. Only main and tests'
// TestMain call it.
func StdStreams() Streams {
	return Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Run executes root with args and turns its error into an exit code. It never
// calls os.Exit. SIGINT and SIGTERM cancel the command's context.
func Run(root *cobra.Command, args []string, s Streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out) // --help and --version are the requested output
	root.SetErr(s.ErrOut)
	root.SilenceUsage, root.SilenceErrors = true, true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return Usage(err) })
	err := root.ExecuteContext(ctx)
	if err != nil && ctx.Err() != nil && !isExitError(err) {
		err = errors.Join(ErrInterrupted, err)
	}
	return ExitCode(err, s)
}

// ExitCode reports err on the error stream (unless it is silent) and returns
// the exit code it maps to.
func ExitCode(err error, s Streams) int {
	if err == nil {
		return ExitOK
	}
	if ee, ok := errors.AsType[*ExitError](err); ok {
		if !ee.Silent {
			fmt.Fprintf(s.ErrOut, "ERROR: %v\n", ee)
		}
		return ee.Code
	}
	fmt.Fprintf(s.ErrOut, "ERROR: %v\n", err)
	_, usage := errors.AsType[*UsageError](err)
	switch {
	case errors.Is(err, ErrInterrupted), errors.Is(err, context.Canceled):
		return ExitInterrupted
	case usage, isCobraUsage(err):
		return ExitUsage
	default:
		return ExitFailure
	}
}

func isExitError(err error) bool {
	_, ok := errors.AsType[*ExitError](err)
	return ok
}

// isCobraUsage recognises the argument errors cobra builds itself
// (positional-argument validators and command lookup).
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{
		"unknown command", "accepts ", "requires at least", "requires at most",
		"received ", "invalid argument", "unknown flag", "unknown shorthand flag",
		"flag needs an argument", "if any flags in the group",
	} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}
