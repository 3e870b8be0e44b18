package labnet

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault is a scripted fault: the Nth matching request (1-based; 0 = every
// one) of Service whose method is Method ("" = any) and whose path starts
// with PathPrefix fails with Status, or hangs until the client gives up.
type Fault struct {
	Service    string `json:"service"`
	Method     string `json:"method,omitempty"`
	PathPrefix string `json:"pathPrefix,omitempty"`
	Nth        int    `json:"nth,omitempty"`
	Status     int    `json:"status,omitempty"`
	Hang       bool   `json:"hang,omitempty"`

	seen int
}

// Knobs are the fault settings of the whole lab. The zero value injects
// nothing.
type Knobs struct {
	// Latency is added to every request.
	Latency time.Duration `json:"latency,omitempty"`
	// ErrorRate is the probability (0..1) that a request fails with 503.
	ErrorRate float64 `json:"errorRate,omitempty"`
	// HangRate is the probability that a request never gets an answer
	// (until the client's deadline).
	HangRate float64 `json:"hangRate,omitempty"`
	// Seed makes the random faults replayable.
	Seed uint64 `json:"seed,omitempty"`
	// Faults are scripted faults.
	Faults []Fault `json:"faults,omitempty"`
}

// Injector applies Knobs. It is safe for concurrent use.
type Injector struct {
	mu    sync.Mutex
	knobs Knobs
	rng   *rand.Rand
}

// NewInjector returns an injector for k.
func NewInjector(k Knobs) *Injector {
	return &Injector{knobs: k, rng: rand.New(rand.NewPCG(k.Seed, k.Seed^0x9e3779b97f4a7c15))} //nolint:gosec // replayable fault injection, not security
}

// Set replaces the knobs (the seed restarts the random sequence).
func (i *Injector) Set(k Knobs) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.knobs = k
	i.rng = rand.New(rand.NewPCG(k.Seed, k.Seed^0x9e3779b97f4a7c15)) //nolint:gosec // as above
}

// Decision is what the injector decided for one request.
type Decision struct {
	Delay  time.Duration
	Status int  // 0 = answer normally
	Hang   bool // never answer
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
			d.Status, d.Hang = f.Status, f.Hang
			return d
		}
	}
	switch r := i.rng.Float64(); {
	case r < i.knobs.HangRate:
		d.Hang = true
	case r < i.knobs.HangRate+i.knobs.ErrorRate:
		d.Status = http.StatusServiceUnavailable
	}
	return d
}

// Middleware records every request of service in rec and applies the
// injector's faults before next sees it.
func Middleware(service string, inj *Injector, rec *Recorder, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			rec.Record(Call{Service: service, Method: r.Method, Path: r.URL.Path, Status: sw.status, Start: start, Duration: time.Since(start)})
		}()
		d := Decision{}
		if inj != nil {
			d = inj.Decide(service, r.Method, r.URL.Path)
		}
		if d.Delay > 0 {
			select {
			case <-time.After(d.Delay):
			case <-r.Context().Done():
				abandoned(sw)
			}
		}
		switch {
		case d.Hang:
			<-r.Context().Done()
			abandoned(sw)
		case d.Status != 0:
			http.Error(sw, "injected fault", d.Status)
		default:
			next.ServeHTTP(sw, r)
		}
	})
}

// abandoned ends a request whose client gave up without any answer: the
// connection is dropped (http.ErrAbortHandler), so a client racing its own
// deadline can never read an empty 200 as success. The deferred recorder
// still records it, as 499 (nginx's "client closed request").
func abandoned(sw *statusWriter) {
	sw.status = 499
	panic(http.ErrAbortHandler)
}

type statusWriter struct {
	http.ResponseWriter
	status int
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
