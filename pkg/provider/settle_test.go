package provider_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/provider"
)

// A create applied after the client gave up shows up later: AwaitLate keeps
// looking until it does, not only once.
func TestAwaitLateFindsWhatAppearsLater(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	got, err := provider.AwaitLate(t.Context(), 5*time.Second, func(context.Context) ([]string, error) {
		if asked.Add(1) < 3 {
			return nil, nil
		}
		return []string{"srv-1"}, nil
	})
	if err != nil || len(got) != 1 || asked.Load() != 3 {
		t.Fatalf("AwaitLate = %v, %v after %d looks; want [srv-1] after 3", got, err, asked.Load())
	}
}

// Nothing found for the whole window: an empty answer, after the window.
func TestAwaitLateGivesUpAfterTheWindow(t *testing.T) {
	t.Parallel()
	start := time.Now()
	got, err := provider.AwaitLate(t.Context(), 300*time.Millisecond, func(context.Context) ([]string, error) { return nil, nil })
	if err != nil || len(got) != 0 {
		t.Fatalf("AwaitLate = %v, %v; want nothing", got, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("gave up after %v, before the window", took)
	}
}

// A look that fails is no "not found".
func TestAwaitLateFailsClosed(t *testing.T) {
	t.Parallel()
	boom := errors.New("list: 500")
	if _, err := provider.AwaitLate(t.Context(), time.Minute, func(context.Context) ([]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the look's", err)
	}
}

func TestLateWindow(t *testing.T) {
	t.Parallel()
	if got := provider.LateWindow(time.Second); got != provider.MinLateWindow {
		t.Errorf("LateWindow(1s) = %v, want the floor %v", got, provider.MinLateWindow)
	}
	if got := provider.LateWindow(time.Minute); got != time.Minute {
		t.Errorf("LateWindow(1m) = %v, want the request's own timeout", got)
	}
}

func TestDedupeOwned(t *testing.T) {
	t.Parallel()
	d := func(id string, used bool) provider.Duplicate[string] {
		return provider.Duplicate[string]{Item: id, ID: id, InUse: used}
	}
	for _, tc := range []struct {
		name string
		dups []provider.Duplicate[string]
		keep string
		drop []string
		err  string
	}{
		{name: "one in use", dups: []provider.Duplicate[string]{d("a", false), d("b", true), d("c", false)}, keep: "b", drop: []string{"a", "c"}},
		{name: "none in use keeps the first", dups: []provider.Duplicate[string]{d("a", false), d("b", false)}, keep: "a", drop: []string{"b"}},
		{name: "two in use refuses naming both", dups: []provider.Duplicate[string]{d("a", true), d("b", true)}, err: "in use (a, b)"},
		{name: "nothing", err: "no resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keep, drop, err := provider.DedupeOwned("server x", tc.dups)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || len(drop) != 0 {
					t.Fatalf("err = %v, drop %v; want %q and nothing dropped", err, drop, tc.err)
				}
				return
			}
			if err != nil || keep != tc.keep || strings.Join(drop, ",") != strings.Join(tc.drop, ",") {
				t.Fatalf("keep %q drop %v err %v; want keep %q drop %v", keep, drop, err, tc.keep, tc.drop)
			}
		})
	}
}
