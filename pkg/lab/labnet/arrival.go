package labnet

// OnArrival makes f see every request as it reaches a lab service, before
// the service or the fault injector handles it (its Status and Duration
// are zero), so a test can act in the middle of a call: kill the client
// that sent it, say. f runs on the request's goroutine and the request
// waits for it; nil stops it.
func (r *Recorder) OnArrival(f func(Call)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrival = f
}

// Arrived tells the OnArrival function about a request (services that do
// not go through Middleware, such as the Talos API, call it themselves).
// A nil recorder ignores it.
func (r *Recorder) Arrived(c Call) {
	if r == nil {
		return
	}
	r.mu.Lock()
	f := r.arrival
	r.mu.Unlock()
	if f != nil {
		f(c)
	}
}
