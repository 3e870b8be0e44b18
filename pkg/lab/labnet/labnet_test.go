package labnet_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/talosc/talosc/pkg/lab/labnet"
)

func TestListenRefusesAnythingButLoopback(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "198.51.100.1:0", "localhost:0", "[::1]:0", ":0"} {
		if l, err := labnet.Listen(t.Context(), addr); err == nil {
			_ = l.Close()
			t.Errorf("Listen(%q) succeeded", addr)
		}
	}
	l, err := labnet.Listen(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
}

func TestDialerRefusesAnythingButLoopback(t *testing.T) {
	t.Parallel()
	_, err := labnet.Dialer().DialContext(t.Context(), "tcp", "192.0.2.1:9")
	if !errors.Is(err, labnet.ErrNotLoopback) {
		t.Fatalf("dial 192.0.2.1: %v, want ErrNotLoopback", err)
	}
}

func TestInjectorScriptedAndSeeded(t *testing.T) {
	t.Parallel()
	inj := labnet.NewInjector(labnet.Knobs{Faults: []labnet.Fault{{Service: "nova", Method: "POST", PathPrefix: "/servers", Nth: 2, Status: 500}}})
	var got []int
	for range 3 {
		got = append(got, inj.Decide("nova", "POST", "/servers").Status)
	}
	if diff := cmp.Diff([]int{0, 500, 0}, got); diff != "" {
		t.Fatalf("scripted fault on the 2nd create (-want +got):\n%s", diff)
	}
	run := func() []labnet.Decision {
		i := labnet.NewInjector(labnet.Knobs{Seed: 42, ErrorRate: 0.3, HangRate: 0.1})
		var ds []labnet.Decision
		for range 50 {
			ds = append(ds, i.Decide("neutron", "GET", "/v2.0/ports"))
		}
		return ds
	}
	a, b := run(), run()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("the same seed gave another sequence:\n%s", diff)
	}
	errs := 0
	for _, d := range a {
		if d.Status != 0 || d.Hang {
			errs++
		}
	}
	if errs == 0 || errs == len(a) {
		t.Fatalf("%d of %d requests faulted; want some, not all", errs, len(a))
	}
}

func TestMiddlewareRecordsAndInjects(t *testing.T) {
	t.Parallel()
	rec := &labnet.Recorder{}
	inj := labnet.NewInjector(labnet.Knobs{Latency: 20 * time.Millisecond, Faults: []labnet.Fault{
		{Service: "glance", Method: "DELETE", Status: 409},
		{Service: "glance", Method: "PUT", Hang: true},
	}})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	srv := httptest.NewServer(labnet.Middleware("glance", inj, rec, ok))
	defer srv.Close()
	do := func(method string, timeout time.Duration) (int, error) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+"/v2/images", nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}
	start := time.Now()
	if code, err := do("POST", 5*time.Second); err != nil || code != http.StatusCreated {
		t.Fatalf("POST: %d %v", code, err)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Error("latency was not applied")
	}
	if code, _ := do("DELETE", 5*time.Second); code != http.StatusConflict {
		t.Errorf("DELETE: %d, want the injected 409", code)
	}
	if _, err := do("PUT", 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PUT: %v, want the client to time out on the hang", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rec.Calls()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	calls := rec.Calls()
	if len(calls) != 3 {
		t.Fatalf("recorded %d calls, want 3", len(calls))
	}
	if len(rec.Mutations()) != 3 || rec.Counts(nil)["glance POST /v2/images"] != 1 || rec.Busy() <= 0 {
		t.Errorf("recorder: mutations %d counts %v busy %s", len(rec.Mutations()), rec.Counts(nil), rec.Busy())
	}
}

// Busy is the union of the busy intervals: overlapping calls count
// once, work counts, idle gaps do not.
func TestBusyIsTheUnionOfBusyIntervals(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var rec labnet.Recorder
	rec.Record(labnet.Call{Service: "nova", Method: "GET", Start: at(0), Duration: 100 * time.Millisecond})
	rec.Record(labnet.Call{Service: "nova", Method: "GET", Start: at(50), Duration: 100 * time.Millisecond})   // overlaps: +50
	rec.Work("talos", "boot", at(400), 200*time.Millisecond)                                                   // after a 250 ms gap
	rec.Record(labnet.Call{Service: "talos", Method: "grpc", Start: at(500), Duration: 10 * time.Millisecond}) // inside the boot
	if got, want := rec.Busy(), 350*time.Millisecond; got != want {
		t.Errorf("Busy = %s, want %s", got, want)
	}
	if n := len(rec.Calls()); n != 3 {
		t.Errorf("work showed up among the calls: %d calls", n)
	}
	if w := rec.WorkSpans(); len(w) != 1 || w[0].Path != "boot" || w[0].Duration != 200*time.Millisecond {
		t.Errorf("WorkSpans = %+v, want the one boot", w)
	}
}
