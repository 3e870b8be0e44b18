package labnet

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// lateQueue holds the late requests an injector runs in the background.
type lateQueue struct {
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
	next    int
	pending map[int]string // what each late request is, by its number
}

// Late runs apply (what: the request, for Waiting) in the background once
// delay has passed: a request whose client gave up, which its API
// applies anyway. apply's context has
// parent's values (a gRPC peer, an HTTP server's) but not its deadline or
// cancellation: it ends only when the injector is closed. Close cancels
// the applies still waiting and waits for those running. false: the
// injector is closed; apply never runs.
func (i *Injector) Late(parent context.Context, what string, delay time.Duration, apply func(context.Context)) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	q := &i.late
	if q.closed {
		return false
	}
	if q.pending == nil {
		q.pending = map[int]string{}
	}
	q.next++
	id := q.next
	q.pending[id] = what
	q.wg.Go(func() {
		defer func() {
			i.mu.Lock()
			delete(q.pending, id)
			i.mu.Unlock()
		}()
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-q.ctx.Done():
			return // the lab stops: a late request it never applied
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
		defer cancel()
		defer context.AfterFunc(q.ctx, cancel)()
		apply(ctx)
	})
	return true
}

// Pending is the number of late requests not yet applied (or applying).
func (i *Injector) Pending() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return len(i.late.pending)
}

// Waiting names the late requests not yet applied (or applying), oldest
// first.
func (i *Injector) Waiting() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	ids := slices.Sorted(maps.Keys(i.late.pending))
	names := make([]string, len(ids))
	for k, id := range ids {
		names[k] = i.late.pending[id]
	}
	return names
}

// Close drops the late requests not yet applied, cancels those applying
// and waits for them to return. Later late decisions are not applied.
func (i *Injector) Close() error {
	i.mu.Lock()
	i.late.closed = true
	i.mu.Unlock()
	i.late.cancel()
	i.late.wg.Wait()
	return nil
}

// lateApply reads r's body now, before the client's answer ends, and
// returns what has the service (next) apply r delay after it is called,
// its answer thrown away, recorded as the service's own work ("late POST
// /path"); nil when the body could not be read (the client went away:
// nothing is applied).
func lateApply(service string, inj *Injector, rec *Recorder, next http.Handler, r *http.Request, delay time.Duration) func() {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil
	}
	later := r.Clone(r.Context())
	later.Body = io.NopCloser(bytes.NewReader(body))
	later.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return func() {
		inj.Late(r.Context(), service+" "+r.Method+" "+later.URL.Path, delay, func(ctx context.Context) {
			start := time.Now()
			next.ServeHTTP(&discardWriter{header: http.Header{}}, later.WithContext(ctx))
			rec.Work(service, "late "+r.Method+" "+later.URL.Path, start, time.Since(start))
		})
	}
}
