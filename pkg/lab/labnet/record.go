package labnet

import (
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Methods recorded for gRPC calls: reads (Version, lists, gets) and the rest.
const (
	MethodGRPCRead  = "grpc-read"
	MethodGRPCWrite = "grpc"
)

// Call is one request a lab service answered.
type Call struct {
	Service string `json:"service"` // "nova", "proxmox", "talos", …
	Method  string `json:"method"`  // HTTP method, or MethodGRPCRead/MethodGRPCWrite
	Path    string `json:"path"`    // URL path, or the gRPC full method
	Status  int    `json:"status"`  // HTTP status, or the gRPC code
	// Lost: the request was applied, then its answer lost (Decision.After).
	Lost bool `json:"lost,omitempty"`
	// Late: the answer was lost before the request was applied, and the
	// service applies it later (Decision.Late; Recorder.Work records
	// the apply).
	Late     bool          `json:"late,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
}

// Mutating reports whether the call could change state (anything but GET,
// HEAD, OPTIONS, and gRPC methods the recorder was told are reads).
func (c Call) Mutating() bool {
	switch c.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, MethodGRPCRead:
		return false
	default:
		return true
	}
}

// Recorder keeps every call, in order. It is safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	calls   []Call
	work    []Call
	arrival func(Call) // see OnArrival
}

// Work records simulated work the lab did on its own (a node booting, an
// API server starting): it counts towards Busy but is not a call.
func (r *Recorder) Work(service, what string, start time.Time, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.work = append(r.work, Call{Service: service, Method: "work", Path: what, Start: start, Duration: d})
}

// Record appends c.
func (r *Recorder) Record(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Calls returns a copy of every call so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Reset forgets every call (between phases of a test).
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls, r.work = nil, nil
}

// Mutations returns the calls that could change state.
func (r *Recorder) Mutations() []Call {
	return slices.DeleteFunc(r.Calls(), func(c Call) bool { return !c.Mutating() })
}

// Counts returns the number of calls per "service method path-kind", where
// key normalises the path (for example by replacing IDs with {id}); nil keeps
// paths as they are.
func (r *Recorder) Counts(key func(Call) string) map[string]int {
	if key == nil {
		key = func(c Call) string { return c.Service + " " + c.Method + " " + c.Path }
	}
	out := map[string]int{}
	for _, c := range r.Calls() {
		out[key(c)]++
	}
	return out
}

// WorkSpans returns a copy of the simulated work recorded so far (see Work).
func (r *Recorder) WorkSpans() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.work)
}

// Busy is the time the lab itself was busy: answering a call or doing
// simulated work (booting a node, starting an API server), the union of
// those intervals. It is not a lower bound on a client's wall time: every
// call the client makes, needed or not, one after the other or not, adds
// to it, so a client that serialises its work grows it too. A client's
// wall time above it is idle gaps only: computation, and polling slack
// between the lab being ready and the client noticing.
func (r *Recorder) Busy() time.Duration {
	r.mu.Lock()
	spans := append(slices.Clone(r.calls), r.work...)
	r.mu.Unlock()
	slices.SortFunc(spans, func(a, b Call) int { return a.Start.Compare(b.Start) })
	var total time.Duration
	var end time.Time
	for _, c := range spans {
		s, e := c.Start, c.Start.Add(c.Duration)
		if s.Before(end) {
			s = end
		}
		if e.After(s) {
			total += e.Sub(s)
			end = e
		}
	}
	return total
}

// Services lists the services that answered at least one call, sorted.
func (r *Recorder) Services() []string {
	set := map[string]bool{}
	for _, c := range r.Calls() {
		set[c.Service] = true
	}
	return slices.Sorted(maps.Keys(set))
}
