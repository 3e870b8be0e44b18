package proxmox

import "sync"

// EventKind is what happened to a VM.
type EventKind string

// The VM events the server emits (the Talos-node simulation boots a node on
// VMStarted and takes it down on VMStopped/VMDeleted).
const (
	VMCreated EventKind = "created"
	VMStarted EventKind = "started"
	VMStopped EventKind = "stopped"
	VMDeleted EventKind = "deleted"
)

// Event is one VM lifecycle event. Events are delivered in order, one at a
// time, outside the server's lock: a hook may call back into the Server.
type Event struct {
	Kind EventKind
	VMID int
	Node string
	Name string
}

// OnEvent registers fn for every later VM event.
func (s *Server) OnEvent(fn func(Event)) {
	s.events.subscribe(fn)
}

// eventQueue delivers events in order on one goroutine, never blocking the
// server.
type eventQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending []Event
	hooks   []func(Event)
	closed  bool
}

func newEventQueue() *eventQueue {
	q := &eventQueue{}
	q.cond = sync.NewCond(&q.mu)
	go q.run()
	return q
}

func (q *eventQueue) subscribe(fn func(Event)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.hooks = append(q.hooks, fn)
}

func (q *eventQueue) push(e Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.pending = append(q.pending, e)
	q.cond.Signal()
}

func (q *eventQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Signal()
}

func (q *eventQueue) run() {
	for {
		q.mu.Lock()
		for len(q.pending) == 0 && !q.closed {
			q.cond.Wait()
		}
		if q.closed {
			q.mu.Unlock()
			return
		}
		e := q.pending[0]
		q.pending = q.pending[1:]
		hooks := append([]func(Event){}, q.hooks...)
		q.mu.Unlock()
		for _, h := range hooks {
			h(e)
		}
	}
}
