package labnet

import (
	"bytes"
	"context"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault is a scripted fault: the Nth matching request (1-based; 0 = every
// one) of Service whose method is Method ("" = any) and whose path starts
// with PathPrefix fails with Status, or with a reset connection (Reset), or
// hangs until the client gives up (Hang). Without After the fault happens
// before the service sees the request (it is not applied); with After the
// service handles the request (it IS applied) and then its answer is lost.
// With Late the client's answer is lost first (Status, Hang or Reset; 504
// when none is given) and the service applies a mutating request
// Knobs.LateBy after that answer ended, as a real API keeps working on a
// request its client gave up.
type Fault struct {
	Service    string `json:"service"`
	Method     string `json:"method,omitempty"`
	PathPrefix string `json:"pathPrefix,omitempty"`
	Nth        int    `json:"nth,omitempty"`
	Status     int    `json:"status,omitempty"`
	Hang       bool   `json:"hang,omitempty"`
	Reset      bool   `json:"reset,omitempty"`
	After      bool   `json:"after,omitempty"`
	Late       bool   `json:"late,omitempty"`

	seen int
}

// Knobs are the fault settings of the whole lab. The zero value injects
// nothing. Random faults are drawn per request key (service, method, path
// and how many requests with that key came before), from Seed: a run
// replays whatever order concurrent requests arrive in.
type Knobs struct {
	// Latency is added to every request.
	Latency time.Duration `json:"latency,omitempty"`
	// ErrorRate is the probability (0..1) that a request fails with 503
	// before the service sees it.
	ErrorRate float64 `json:"errorRate,omitempty"`
	// HangRate is the probability that a request never gets an answer
	// (until the client's deadline) and is not applied.
	HangRate float64 `json:"hangRate,omitempty"`
	// LostRate is the probability that a mutating request (see Mutating)
	// is applied and its answer then lost, as a proxy loses it: 502, 504,
	// a reset connection, or no answer until the client's deadline.
	LostRate float64 `json:"lostRate,omitempty"`
	// LateRate is the probability that a mutating request's answer is
	// lost before the service sees it (504 at once, or no answer until the
	// client's deadline) and the service applies the request LateBy after
	// that: a real API (nova-api, neutron-server, a Proxmox task queue)
	// keeps working on a request after its client gave up.
	LateRate float64 `json:"lateRate,omitempty"`
	// LateBy is how long after the client's answer ended a late request
	// is applied (0 = DefaultLateBy).
	LateBy time.Duration `json:"lateBy,omitempty"`
	// SlowRate is the probability that an answer comes Slow late (set it
	// just under the client's per-request timeout).
	SlowRate float64       `json:"slowRate,omitempty"`
	Slow     time.Duration `json:"slow,omitempty"`
	// Seed makes the random faults replayable.
	Seed uint64 `json:"seed,omitempty"`
	// Faults are scripted faults.
	Faults []Fault `json:"faults,omitempty"`
}

// DefaultLateBy is how long after the client's answer ended a late
// request is applied when Knobs.LateBy is 0.
const DefaultLateBy = 2 * time.Second

// Injector applies Knobs and runs the late requests it decided (see
// Late); Close stops those. It is safe for concurrent use.
type Injector struct {
	mu    sync.Mutex
	knobs Knobs
	seen  map[string]uint64 // requests per key so far
	late  lateQueue
}

// NewInjector returns an injector for k.
func NewInjector(k Knobs) *Injector {
	i := &Injector{knobs: k, seen: map[string]uint64{}}
	i.late.ctx, i.late.cancel = context.WithCancel(context.Background())
	return i
}

// Set replaces the knobs (the per-key sequences restart).
func (i *Injector) Set(k Knobs) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.knobs = k
	i.seen = map[string]uint64{}
}

// Decision is what the injector decided for one request.
type Decision struct {
	Delay  time.Duration
	Status int  // 0 = answer normally
	Hang   bool // never answer
	Reset  bool // reset the connection instead of answering
	// After: the request is applied first, then Status, Reset or Hang
	// loses its answer.
	After bool
	// Late: Status, Reset or Hang loses the answer first, and a mutating
	// request is applied LateBy after that answer ended.
	Late   bool
	LateBy time.Duration
}

// Lost reports whether the decision loses the answer of an applied request.
func (d Decision) Lost() bool { return d.After && (d.Status != 0 || d.Hang || d.Reset) }

// Mutating reports whether a request of method may change state: anything
// but GET, HEAD, OPTIONS and recorded gRPC reads.
func Mutating(method string) bool {
	return Call{Method: method}.Mutating()
}

// lostAs are the ways a proxy loses an applied request's answer.
var lostAs = []Decision{
	{After: true, Status: http.StatusBadGateway},
	{After: true, Status: http.StatusGatewayTimeout},
	{After: true, Reset: true},
	{After: true, Hang: true},
}

// lateAs are the ways a client gives up on a request its API goes on
// working on: the proxy's 504 at once, or no answer until its deadline.
var lateAs = []Decision{
	{Late: true, Status: http.StatusGatewayTimeout},
	{Late: true, Hang: true},
}

// Decide returns the fault for one request of service.
func (i *Injector) Decide(service, method, path string) Decision {
	i.mu.Lock()
	defer i.mu.Unlock()
	d := Decision{Delay: i.knobs.Latency}
	for idx := range i.knobs.Faults {
		f := &i.knobs.Faults[idx]
		if f.Service != service || (f.Method != "" && f.Method != method) || !strings.HasPrefix(path, f.PathPrefix) {
			continue
		}
		f.seen++
		if f.Nth == 0 || f.seen == f.Nth {
			d.Status, d.Hang, d.Reset, d.After, d.Late = f.Status, f.Hang, f.Reset, f.After, f.Late
			if d.Late && d.Status == 0 && !d.Hang && !d.Reset {
				d.Status = http.StatusGatewayTimeout
			}
			d.LateBy = i.lateBy(d.Late)
			return d
		}
	}
	k := i.knobs
	if k.ErrorRate == 0 && k.HangRate == 0 && k.LostRate == 0 && k.LateRate == 0 && k.SlowRate == 0 {
		return d
	}
	key := service + " " + method + " " + path
	n := i.seen[key]
	i.seen[key] = n + 1
	rng := keyedRand(k.Seed, key, n)
	switch r := rng.Float64(); {
	case r < k.HangRate:
		d.Hang = true
	case r < k.HangRate+k.ErrorRate:
		d.Status = http.StatusServiceUnavailable
	case r < k.HangRate+k.ErrorRate+k.LostRate && Mutating(method):
		lost := lostAs[rng.IntN(len(lostAs))]
		lost.Delay = d.Delay
		d = lost
	case r < k.HangRate+k.ErrorRate+k.LostRate+k.LateRate && Mutating(method):
		late := lateAs[rng.IntN(len(lateAs))]
		late.Delay, late.LateBy = d.Delay, i.lateBy(true)
		d = late
	}
	if rng.Float64() < k.SlowRate {
		d.Delay += k.Slow
	}
	return d
}

// lateBy is how long after its answer a late request is applied (0 for
// any other); callers hold the lock.
func (i *Injector) lateBy(late bool) time.Duration {
	switch {
	case !late:
		return 0
	case i.knobs.LateBy > 0:
		return i.knobs.LateBy
	default:
		return DefaultLateBy
	}
}

// keyedRand is the random source of the nth request with key under seed.
func keyedRand(seed uint64, key string, n uint64) *rand.Rand {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return rand.New(rand.NewPCG(seed, h.Sum64()^(n*0x9e3779b97f4a7c15))) //nolint:gosec // replayable fault injection, not security
}

// Middleware records every request of service in rec and applies the
// injector's faults: before next sees the request, or (Decision.After)
// after next handled it, when the answer is lost instead of sent, or
// (Decision.Late) before next sees a mutating request, which next then
// handles LateBy after the client's answer ended. Upgrade requests (exec,
// port-forward) are never lost after the fact nor late: their answer is
// the connection itself.
func Middleware(service string, inj *Injector, rec *Recorder, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		rec.Arrived(Call{Service: service, Method: r.Method, Path: r.URL.Path, Start: start})
		defer func() {
			rec.Record(Call{Service: service, Method: r.Method, Path: r.URL.Path, Status: sw.status, Lost: sw.lost, Late: sw.late, Start: start, Duration: time.Since(start)})
		}()
		d := Decision{}
		if inj != nil {
			d = inj.Decide(service, r.Method, r.URL.Path)
		}
		if (d.After || d.Late) && r.Header.Get("Upgrade") != "" {
			d = Decision{}
		}
		if d.Delay > 0 {
			select {
			case <-time.After(d.Delay):
			case <-r.Context().Done():
				abandoned(sw)
			}
		}
		if d.Lost() {
			next.ServeHTTP(&discardWriter{header: http.Header{}}, r)
			sw.lost = true
		} else if d.After {
			d = Decision{}
		}
		if d.Late && Mutating(r.Method) {
			if schedule := lateApply(service, inj, rec, next, r, d.LateBy); schedule != nil {
				sw.late = true
				defer schedule() // once the answer ended, whichever way
			}
		}
		fail(sw, r, d, next)
	})
}

// fail answers r as d says: a hang until the client gives up, a reset
// connection, an error status, or next's answer.
func fail(sw *statusWriter, r *http.Request, d Decision, next http.Handler) {
	switch {
	case d.Hang:
		// Reading the whole body lets the server notice the client
		// hanging up (its context ends only then).
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		abandoned(sw)
	case d.Reset:
		abandoned(sw)
	case d.Status != 0:
		http.Error(sw, "injected fault", d.Status)
	default:
		next.ServeHTTP(sw, r)
	}
}

// discardWriter takes the answer of a request whose answer is lost.
type discardWriter struct {
	header http.Header
	body   bytes.Buffer
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(b []byte) (int, error) { return w.body.Write(b) }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Flush()                      {}

// abandoned ends a request without any answer (the client gave up, or a
// reset is injected): the connection is dropped (http.ErrAbortHandler), so
// a client racing its own deadline can never read an empty 200 as success.
// The deferred recorder still records it, as 499 (nginx's "client closed
// request").
func abandoned(sw *statusWriter) {
	sw.status = 499
	panic(http.ErrAbortHandler)
}

type statusWriter struct {
	http.ResponseWriter
	status int
	lost   bool // the request was applied and its answer lost
	late   bool // the request is applied after its answer
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the underlying writer
// (hijacking for exec/port-forward, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets streaming handlers flush through the recorder.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
