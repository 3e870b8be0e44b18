package labnet_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

// lateService is a handler that records what it applied, and when.
type lateService struct {
	mu      sync.Mutex
	applied []string // bodies
	at      []time.Time
	ctxErr  []error // the request context's error while applying
}

func (s *lateService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.applied = append(s.applied, string(body))
	s.at = append(s.at, time.Now())
	s.ctxErr = append(s.ctxErr, r.Context().Err())
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (s *lateService) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.applied)
}

// post sends a POST with body to srv and returns the status or error.
func post(ctx context.Context, srv *httptest.Server, body string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v2.1/servers", strings.NewReader(body))
	resp, err := srv.Client().Do(req)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// A late request is applied after the client's answer ended, not before:
// the resource is absent right after the 504 (or the client's deadline)
// and present LateBy later, applied from the body the client sent, with a
// context the client's giving up did not cancel.
func TestMiddlewareAppliesLateRequestsAfterTheAnswer(t *testing.T) {
	t.Parallel()
	const lateBy = time.Second
	for _, tc := range []struct {
		name  string
		fault labnet.Fault
		check func(code int, err error) bool
	}{
		{"504", labnet.Fault{}, func(code int, err error) bool { return err == nil && code == http.StatusGatewayTimeout }},
		{"hang", labnet.Fault{Hang: true}, func(_ int, err error) bool { return errors.Is(err, context.DeadlineExceeded) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.fault
			f.Service, f.Method, f.Nth, f.Late = "nova", http.MethodPost, 1, true
			inj := labnet.NewInjector(labnet.Knobs{LateBy: lateBy, Faults: []labnet.Fault{f}})
			t.Cleanup(func() { _ = inj.Close() })
			rec := &labnet.Recorder{}
			svc := &lateService{}
			srv := httptest.NewServer(labnet.Middleware("nova", inj, rec, svc))
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			code, err := post(ctx, srv, `{"server":{"name":"late"}}`)
			cancel()
			gaveUp := time.Now()
			if !tc.check(code, err) {
				t.Fatalf("client saw %d %v", code, err)
			}
			if svc.count() != 0 {
				t.Fatal("the request was applied before the client's answer ended")
			}
			waitFor(t, func() bool { return len(rec.Calls()) == 1 }) // a hang is recorded once the server sees the client go
			if calls := rec.Calls(); !calls[0].Late || calls[0].Lost {
				t.Fatalf("recorded %+v, want one late call", calls)
			}
			if w := inj.Waiting(); inj.Pending() != 1 || len(w) != 1 || !strings.HasPrefix(w[0], "nova POST /") {
				t.Fatalf("%d late requests pending (%q), want the nova POST", inj.Pending(), w)
			}
			waitFor(t, func() bool { return svc.count() == 1 })
			svc.mu.Lock()
			defer svc.mu.Unlock()
			// gaveUp is when the client read the end of its answer, a
			// little after the server ended it: leave room for a busy machine
			if got := svc.at[0].Sub(gaveUp); got < lateBy/2 {
				t.Errorf("applied %v after the client gave up, want about %v", got, lateBy)
			}
			if svc.applied[0] != `{"server":{"name":"late"}}` || svc.ctxErr[0] != nil {
				t.Errorf("applied body %q with context error %v", svc.applied[0], svc.ctxErr[0])
			}
			if w := rec.WorkSpans(); len(w) != 1 || w[0].Path != "late POST /v2.1/servers" {
				t.Errorf("work recorded %+v, want the late apply", w)
			}
		})
	}
}

// Reads are never late (they apply nothing): a scripted late fault on a
// GET fails it and applies nothing later.
func TestMiddlewareNeverAppliesLateReads(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{LateBy: time.Millisecond, Faults: []labnet.Fault{{Service: "nova", Late: true}}})
	t.Cleanup(func() { _ = inj.Close() })
	svc := &lateService{}
	srv := httptest.NewServer(labnet.Middleware("nova", inj, &labnet.Recorder{}, svc))
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v2.1/servers", nil)
	resp, err := srv.Client().Do(req)
	if err != nil || resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("GET: %v %v, want 504", resp, err)
	}
	_ = resp.Body.Close()
	time.Sleep(50 * time.Millisecond)
	if svc.count() != 0 || inj.Pending() != 0 {
		t.Fatalf("a read was applied late (%d) or is pending (%d)", svc.count(), inj.Pending())
	}
}

// LateRate draws late faults for mutating requests only: 504 or a hang,
// each with the knobs' LateBy (DefaultLateBy when unset).
func TestInjectorDrawsLateFaults(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Seed: 3, LateRate: 1})
	for _, m := range []string{"GET", "HEAD", labnet.MethodGRPCRead} {
		if d := inj.Decide("nova", m, "/servers"); d != (labnet.Decision{}) {
			t.Errorf("%s: %+v, want no fault", m, d)
		}
	}
	kinds := map[string]int{}
	for range 40 {
		d := inj.Decide("neutron", "POST", "/v2.0/ports")
		switch {
		case !d.Late || d.After || d.LateBy != labnet.DefaultLateBy:
			t.Fatalf("%+v: want a late fault applied DefaultLateBy later", d)
		case d.Status == http.StatusGatewayTimeout:
			kinds["504"]++
		case d.Hang:
			kinds["hang"]++
		default:
			t.Fatalf("%+v: want a 504 or a hang", d)
		}
	}
	if len(kinds) != 2 {
		t.Errorf("late faults drawn %v, want both 504s and hangs", kinds)
	}
	inj.Set(labnet.Knobs{Seed: 3, LateRate: 0.3, LostRate: 0.3, LateBy: time.Second})
	var late, lost int
	for range 100 {
		d := inj.Decide("nova", "POST", "/servers")
		if d.Late {
			late++
		}
		if d.Lost() {
			lost++
		}
	}
	if late < 15 || late > 45 || lost < 15 || lost > 45 {
		t.Errorf("of 100 requests %d late and %d lost, want about 30 each", late, lost)
	}
}

// Close drops the late requests still waiting and leaves none running;
// after it a late decision applies nothing.
func TestInjectorCloseDropsPendingLateRequests(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{LateBy: time.Hour, Faults: []labnet.Fault{{Service: "nova", Late: true}}})
	svc := &lateService{}
	srv := httptest.NewServer(labnet.Middleware("nova", inj, &labnet.Recorder{}, svc))
	t.Cleanup(srv.Close)
	if code, err := post(t.Context(), srv, "{}"); code != http.StatusGatewayTimeout {
		t.Fatalf("POST: %d %v, want 504", code, err)
	}
	if inj.Pending() != 1 {
		t.Fatalf("%d pending, want 1", inj.Pending())
	}
	done := make(chan struct{})
	go func() { _ = inj.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a late request due in an hour")
	}
	if inj.Pending() != 0 || svc.count() != 0 {
		t.Fatalf("after Close: %d pending, %d applied", inj.Pending(), svc.count())
	}
	if inj.Late(t.Context(), "test", 0, func(context.Context) { t.Error("applied after Close") }) {
		t.Error("Late accepted a request after Close")
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}
