package labnet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// A lost answer is lost after the service applied the request: the
// handler ran (the resource exists), the client sees 502, 504, a reset
// connection or nothing until its deadline.
func TestMiddlewareLosesAnswersAfterApplying(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		fault   labnet.Fault
		timeout time.Duration
		check   func(code int, err error) bool
	}{
		{"502", labnet.Fault{Status: http.StatusBadGateway}, 5 * time.Second, func(code int, err error) bool { return err == nil && code == http.StatusBadGateway }},
		{"504", labnet.Fault{Status: http.StatusGatewayTimeout}, 5 * time.Second, func(code int, err error) bool { return err == nil && code == http.StatusGatewayTimeout }},
		{"reset", labnet.Fault{Reset: true}, 5 * time.Second, func(_ int, err error) bool {
			return err != nil && !errors.Is(err, context.DeadlineExceeded)
		}},
		{"hang", labnet.Fault{Hang: true}, 200 * time.Millisecond, func(_ int, err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, after := range []bool{false, true} {
				f := tc.fault
				f.Service, f.Method, f.After = "neutron", "POST", after
				var applied atomic.Int32
				rec := &labnet.Recorder{}
				h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					applied.Add(1)
					w.WriteHeader(http.StatusCreated)
					_, _ = io.WriteString(w, `{"network":{"id":"x"}}`)
				})
				srv := httptest.NewServer(labnet.Middleware("neutron", labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{f}}), rec, h))
				ctx, cancel := context.WithTimeout(t.Context(), tc.timeout)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v2.0/networks", strings.NewReader(`{}`))
				code, err := 0, error(nil)
				if resp, derr := srv.Client().Do(req); derr != nil {
					err = derr
				} else {
					code = resp.StatusCode
					_ = resp.Body.Close()
				}
				cancel()
				srv.Close()
				if !tc.check(code, err) {
					t.Errorf("after=%v: client saw %d %v", after, code, err)
				}
				if want := map[bool]int32{false: 0, true: 1}[after]; applied.Load() != want {
					t.Errorf("after=%v: handler ran %d times, want %d", after, applied.Load(), want)
				}
				if calls := rec.Calls(); len(calls) != 1 || calls[0].Lost != after {
					t.Errorf("after=%v: recorded %+v", after, calls)
				}
			}
		})
	}
}

// Random faults are drawn per request key: the decisions a key gets do
// not depend on how requests of other keys interleave with it.
func TestInjectorReplaysPerKey(t *testing.T) {
	t.Parallel()
	knobs := labnet.Knobs{Seed: 7, LostRate: 0.3, ErrorRate: 0.1, SlowRate: 0.2, Slow: time.Second}
	keys := []string{"/v2.0/networks", "/v2.0/ports", "/v2.0/routers", "/servers"}
	decide := func(order []string) map[string][]labnet.Decision {
		inj := labnet.NewInjector(knobs)
		got := map[string][]labnet.Decision{}
		for _, p := range order {
			got[p] = append(got[p], inj.Decide("neutron", "POST", p))
		}
		return got
	}
	var inOrder, interleaved []string
	for _, k := range keys {
		for range 40 {
			inOrder = append(inOrder, k)
		}
	}
	for i := range 40 {
		for j := range keys {
			interleaved = append(interleaved, keys[(i+j)%len(keys)])
		}
	}
	a := decide(inOrder)
	if diff := cmp.Diff(a, decide(interleaved)); diff != "" {
		t.Fatalf("another arrival order gave other decisions per key:\n%s", diff)
	}
	// Concurrent arrivals replay too.
	inj := labnet.NewInjector(knobs)
	var mu sync.Mutex
	got := map[string][]labnet.Decision{}
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() {
			for range 40 {
				d := inj.Decide("neutron", "POST", k)
				mu.Lock()
				got[k] = append(got[k], d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(a, got); diff != "" {
		t.Fatalf("concurrent arrivals gave other decisions per key:\n%s", diff)
	}
	var lost, slow, failed int
	for _, ds := range a {
		for _, d := range ds {
			switch {
			case d.Lost():
				lost++
			case d.Status != 0:
				failed++
			}
			if d.Delay >= time.Second {
				slow++
			}
		}
	}
	if lost == 0 || slow == 0 || failed == 0 || lost+failed == len(inOrder) {
		t.Errorf("lost %d, failed %d, slow %d of %d: want some of each, not all", lost, failed, slow, len(inOrder))
	}
}

// Reads are never "lost after being applied": they apply nothing.
func TestInjectorLosesOnlyMutations(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Seed: 1, LostRate: 1})
	for _, m := range []string{"GET", "HEAD", labnet.MethodGRPCRead} {
		if d := inj.Decide("nova", m, "/servers"); d != (labnet.Decision{}) {
			t.Errorf("%s: %+v, want no fault", m, d)
		}
	}
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE", labnet.MethodGRPCWrite} {
		if d := inj.Decide("nova", m, "/servers"); !d.Lost() {
			t.Errorf("%s: %+v, want a lost answer", m, d)
		}
	}
}
