package lab_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab"
	"github.com/talosc/talosc/pkg/lab/labnet"
	"github.com/talosc/talosc/pkg/talos/factory"
)

// TestLabLostKnobs: PUT /knobs takes the lost-answer and slow-answer knobs
// (durations as "25s"), refuses knobs that mean nothing, and a lost rate of
// 1 loses the answer of every mutating call, which the recorder marks.
func TestLabLostKnobs(t *testing.T) {
	t.Parallel()
	if _, err := lab.Start(t.Context(), lab.Options{Provider: "openstack", Knobs: labnet.Knobs{LostRate: 2}}); err == nil || !strings.Contains(err.Error(), "lostRate 2") {
		t.Fatalf("Start with lostRate 2: %v", err)
	}
	l, err := lab.Start(t.Context(), lab.Options{Provider: "openstack"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	control := httptest.NewServer(l.ControlHandler())
	t.Cleanup(control.Close)
	put := func(body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, control.URL+"/knobs", strings.NewReader(body))
		resp, err := control.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for body, want := range map[string]string{
		`{"lostRate": 1.5}`:                                              "lostRate 1.5: must be between 0 and 1",
		`{"lostRate": 0.5, "errorRate": 0.6}`:                            "add up to 1 at most",
		`{"slowRate": 0.5}`:                                              "slowRate 0.5 without slow",
		`{"slowRate": 0.5, "slow": "soon"}`:                              `slow "soon": want a duration`,
		`{"latency": true}`:                                              "latency true: want a duration",
		`{"lostRate": 0.1, "seed": "seven"}`:                             "knobs: json",
		`{"lateRate": 1.5}`:                                              "lateRate 1.5: must be between 0 and 1",
		`{"lateRate": 0.5, "lostRate": 0.6}`:                             "hangRate + errorRate + lostRate + lateRate = 1.1",
		`{"lateRate": 0.5, "lateBy": "soon"}`:                            `lateBy "soon": want a duration`,
		`{"lateRate": 0.5, "lateBy": "-1s"}`:                             "durations cannot be negative",
		`{"faults": [{"service": "nova", "late": true, "after": true}]}`: "faults[0] (nova  ): late and after exclude each other",
	} {
		if code, got := put(body); code != http.StatusBadRequest || !strings.Contains(got, want) {
			t.Errorf("PUT /knobs %s: %d %q, want 400 %q", body, code, got, want)
		}
	}
	if code, got := put(`{"lostRate": 1, "seed": 7, "slowRate": 1, "slow": "1ms", "latency": 1000}`); code != http.StatusNoContent {
		t.Fatalf("PUT /knobs: %d %s", code, got)
	}
	c, err := factory.New(l.Factory.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Versions(t.Context()); err != nil {
		t.Errorf("a read under lost rate 1: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second) // a lost answer may hang
	defer cancel()
	if _, err := c.CreateSchematic(ctx, factory.Schematic{}); err == nil {
		t.Error("a POST under lost rate 1 got its answer")
	}
	// A hung answer is recorded once the client hangs up.
	lostPOST := func(c labnet.Call) bool { return c.Method == http.MethodPost && c.Lost }
	for deadline := time.Now().Add(5 * time.Second); !slices.ContainsFunc(l.Recorder().Calls(), lostPOST) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.ContainsFunc(l.Recorder().Calls(), lostPOST) {
		t.Errorf("no lost POST recorded: %+v", l.Recorder().Calls())
	}
}

// TestLabLateKnobs: PUT /knobs takes lateRate and lateBy; a late call is
// counted in Status (late, and pending until applied), and Close drops
// the late requests not yet applied instead of waiting for them.
func TestLabLateKnobs(t *testing.T) {
	t.Parallel()
	l, err := lab.Start(t.Context(), lab.Options{Provider: "openstack"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	control := httptest.NewServer(l.ControlHandler())
	t.Cleanup(control.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, control.URL+"/knobs", strings.NewReader(`{"lateRate": 1, "lateBy": "1h", "seed": 7}`))
	resp, err := control.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT /knobs: %v %v", resp, err)
	}
	_ = resp.Body.Close()
	c, err := factory.New(l.Factory.URL, factory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second) // a late answer may hang
	defer cancel()
	if _, err := c.CreateSchematic(ctx, factory.Schematic{}); err == nil {
		t.Fatal("a POST under late rate 1 got its answer")
	}
	eventually(t, "the late POST recorded", 5*time.Second, func() error {
		if st := l.Status(); st.Late == 0 || st.LatePending == 0 {
			return fmt.Errorf("status %+v: no late call pending", st)
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a late request due in an hour")
	}
	if n := l.Injector().Pending(); n != 0 {
		t.Errorf("%d late requests still pending after Close", n)
	}
}
