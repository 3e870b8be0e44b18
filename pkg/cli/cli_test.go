package cli_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		err     error
		want    int
		wantErr string
	}{
		{name: "ok", err: nil, want: 0},
		{name: "failure", err: errors.New("boom"), want: 1, wantErr: "ERROR: boom\n"},
		{name: "usage", err: cli.Usagef("bad %s", "flag"), want: 2, wantErr: "ERROR: bad flag\n"},
		{name: "wrapped usage", err: fmt.Errorf("load: %w", cli.Usage(errors.New("x"))), want: 2, wantErr: "ERROR: load: x\n"},
		{name: "interrupted", err: cli.ErrInterrupted, want: 130},
		{name: "canceled", err: fmt.Errorf("wait: %w", context.Canceled), want: 130},
		{name: "explicit", err: &cli.ExitError{Code: 3, Err: errors.New("changes")}, want: 3, wantErr: "ERROR: changes\n"},
		{name: "silent", err: cli.Exit(1), want: 1, wantErr: ""},
		{name: "cobra args", err: errors.New(`accepts at most 1 arg(s), received 2`), want: 2},
		{name: "cobra unknown command", err: errors.New(`unknown command "x" for "kubectl talosc"`), want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _, _, errOut := genericiooptions.NewTestIOStreams()
			if got := cli.ExitCode(tc.err, s); got != tc.want {
				t.Fatalf("ExitCode = %d, want %d", got, tc.want)
			}
			if tc.wantErr != "" || tc.err == nil || tc.name == "silent" {
				if errOut.String() != tc.wantErr {
					t.Fatalf("stderr = %q, want %q", errOut.String(), tc.wantErr)
				}
			}
		})
	}
	if cli.Exit(0) != nil {
		t.Fatal("Exit(0) must be nil")
	}
	if cli.Usage(nil) != nil {
		t.Fatal("Usage(nil) must be nil")
	}
}

func TestRunMapsFlagErrorsToUsage(t *testing.T) {
	t.Parallel()
	s, _, out, errOut := genericiooptions.NewTestIOStreams()
	root := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	if code := cli.Run(root, []string{"--nope"}, s); code != cli.ExitUsage {
		t.Fatalf("code = %d, want 2", code)
	}
	if out.Len() != 0 || !strings.Contains(errOut.String(), "unknown flag: --nope") {
		t.Fatalf("stdout %q stderr %q", out, errOut)
	}
}
