package talosapi

import (
	"context"
	"fmt"
	"time"

	"github.com/siderolabs/talos/pkg/machinery/client"
)

// eventWatch is a node's event stream (MachineService.Events), reopened
// after it breaks from the last event seen, so an event published while
// it was down is not missed (while the node's buffer holds it).
type eventWatch struct {
	c      *Client
	node   string
	ch     chan client.EventResult
	cancel context.CancelFunc
	// opened: the first stream started; lastID: the last event seen.
	opened bool
	lastID string
}

// open starts a stream: the first one from now on, a later one from
// after the last event seen (the whole buffer if none was). Opening is
// bounded by Options.CallTimeout; the stream lives until close or ctx
// ends.
func (w *eventWatch) open(ctx context.Context) error {
	var opts []client.EventsOptionFunc
	switch {
	case w.lastID != "":
		opts = append(opts, client.WithTailID(w.lastID))
	case w.opened:
		opts = append(opts, client.WithTailEvents(-1))
	}
	w.close()
	sctx, cancel := context.WithCancel(ctx)
	if w.node != "" {
		sctx = client.WithNode(sctx, w.node)
	}
	ch := make(chan client.EventResult)
	timer := time.AfterFunc(w.c.opts.CallTimeout, cancel)
	err := w.c.c.EventsWatchV2(sctx, ch, opts...)
	if !timer.Stop() {
		err = &timeoutError{after: w.c.opts.CallTimeout}
	}
	if err != nil {
		cancel()
		return fmt.Errorf("talos Events on %s: %w", w.node, err)
	}
	w.ch, w.cancel, w.opened = ch, cancel, true
	return nil
}

// events is the stream's channel; nil (never ready) while it is down.
func (w *eventWatch) events() <-chan client.EventResult { return w.ch }

// up reports a running stream.
func (w *eventWatch) up() bool { return w.ch != nil }

// seen records the id of an event received.
func (w *eventWatch) seen(id string) {
	if id != "" {
		w.lastID = id
	}
}

// close ends the stream; after it broke (EOF, the node gone, …), the
// next open resumes it.
func (w *eventWatch) close() {
	if w.cancel != nil {
		w.cancel()
	}
	w.ch, w.cancel = nil, nil
}
