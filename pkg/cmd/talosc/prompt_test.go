package talosc

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/talosc/talosc/pkg/cli"
)

func TestConfirm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		code int
	}{
		{in: "demo\n", code: 0},
		{in: "demo", code: 0},
		{in: "  demo  \n", code: 0},
		{in: "prod\n", code: 1},
		{in: "", code: 130},
	} {
		s, in, _, errOut := genericiooptions.NewTestIOStreams()
		in.WriteString(tc.in)
		code := cli.ExitCode(confirm(t.Context(), s, "type the cluster name to confirm: ", "demo"), s)
		if code != tc.code || !strings.HasPrefix(errOut.String(), "type the cluster name to confirm: ") {
			t.Errorf("answer %q: exit %d (want %d), stderr %q", tc.in, code, tc.code, errOut)
		}
	}
}

// TestConfirmEndsAtOnceOnInterrupt: Ctrl-C (a cancelled context) while the
// prompt waits on a terminal that never answers ends it at once, exit 130,
// instead of waiting for Enter (I-O2).
func TestConfirmEndsAtOnceOnInterrupt(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe() // a reader that blocks until the test ends
	t.Cleanup(func() { _ = w.Close() })
	s, _, _, errOut := genericiooptions.NewTestIOStreams()
	s.In = r
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() { done <- confirm(ctx, s, "type yes to go on: ", "yes") }()
	select {
	case err := <-done:
		if code := cli.ExitCode(err, s); code != cli.ExitInterrupted || !errors.Is(err, cli.ErrInterrupted) {
			t.Fatalf("exit %d (%v), want 130 and the interrupted error; stderr %q", code, err, errOut)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the prompt still waits 5s after Ctrl-C")
	}
}
