package labnet

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// lateQueue holds the late requests an injector runs in the background.
type lateQueue struct {
	ctx     context.Context // cancelled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
	pending int
}

// Late runs apply in the background once delay has passed: a request
// whose client gave up, which its API applies anyway. apply's context has
// parent's values (a gRPC peer, an HTTP server's) but not its deadline or
// cancellation: it ends only when the injector is closed. Close cancels
// the applies still waiting and waits for those running. false: the
// injector is closed; apply never runs.
func (i *Injector) Late(parent context.Context, delay time.Duration, apply func(context.Context)) bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	q := &i.late
	if q.closed {
		return false
	}
	q.pending++
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		defer func() {
			i.mu.Lock()
			q.pending--
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
	}()
	return true
}

// Pending is the number of late requests not yet applied (or applying).
func (i *Injector) Pending() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.late.pending
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
		inj.Late(r.Context(), delay, func(ctx context.Context) {
			start := time.Now()
			next.ServeHTTP(&discardWriter{header: http.Header{}}, later.WithContext(ctx))
			rec.Work(service, "late "+r.Method+" "+later.URL.Path, start, time.Since(start))
		})
	}
}
