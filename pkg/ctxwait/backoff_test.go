package ctxwait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/ctxwait"
)

func TestBackoffStartsShortAndGrowsToTheInterval(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		interval time.Duration
		want     []time.Duration
	}{
		{"5 s poll", 5 * time.Second, []time.Duration{200 * ms, 300 * ms, 450 * ms, 675 * ms, 1012500 * time.Microsecond, 1518750 * time.Microsecond, 2278125 * time.Microsecond, 3417187500 * time.Nanosecond, 5 * time.Second, 5 * time.Second}},
		{"interval equal to the first poll", ctxwait.FirstPoll, []time.Duration{200 * ms, 200 * ms, 200 * ms}},
		{"interval shorter than the first poll", 50 * ms, []time.Duration{50 * ms, 50 * ms, 50 * ms}},
		{"interval between two steps", 400 * ms, []time.Duration{200 * ms, 300 * ms, 400 * ms, 400 * ms}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := ctxwait.NewBackoff(tc.interval)
			got := make([]time.Duration, len(tc.want))
			for i := range got {
				got[i] = b.Next()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pauses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackoffSleepEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ctxwait.NewBackoff(time.Hour).Sleep(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
