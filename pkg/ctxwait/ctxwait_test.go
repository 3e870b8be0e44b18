package ctxwait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/ctxwait"
)

func TestSleepWaitsItsDuration(t *testing.T) {
	start := time.Now()
	if err := ctxwait.Sleep(t.Context(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("returned after %s", d)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(10*time.Millisecond, cancel)
	if err := ctxwait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
