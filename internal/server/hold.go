package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Hold keeps requests a dispatcher may not serve yet, and serves them in
// the order they arrived once it opens: a broker still joining its
// cluster holds its clients' requests, as Kafka's do in the listen
// backlog until the broker starts, rather than closing their connections
// (which a client such as franz-go takes for a configuration error and
// does not retry, failing the records it was about to send).
//
// Hold returns a pending reply for each held request and completes it
// with the reply serve gives once the hold opens. A request whose
// connection closed while it was held is not served. Past max held
// requests, or after Close, a request's connection is closed as before.
type Hold struct {
	open atomic.Bool // set once the held requests are all served

	mu     sync.Mutex
	held   []heldRequest
	closed bool
	max    int
	first  time.Time // when the first request of this hold arrived

	stop chan struct{}  // closed by Close: pending forwards give up
	wg   sync.WaitGroup // forward goroutines of replies still pending
}

type heldRequest struct {
	ctx   context.Context
	serve func(context.Context) *Reply
	out   *Reply
}

// NewHold returns a hold that keeps up to max requests until Open.
func NewHold(max int) *Hold { return &Hold{max: max, stop: make(chan struct{})} }

// Opened reports whether requests are served at once.
func (h *Hold) Opened() bool { return h.open.Load() }

// Serve serves the request at once if the hold is open, and otherwise
// keeps it until Open (or Close). Requests arriving while Open serves the
// held ones are kept too, so that a connection's requests are served in
// the order they arrived.
func (h *Hold) Serve(ctx context.Context, serve func(context.Context) *Reply) *Reply {
	if h.open.Load() {
		return serve(ctx)
	}
	h.mu.Lock()
	if h.open.Load() {
		h.mu.Unlock()
		return serve(ctx)
	}
	if h.closed || len(h.held) >= h.max {
		h.mu.Unlock()
		return CloseConnection()
	}
	out := NewPendingReply()
	out.holdsFrame = true
	if len(h.held) == 0 {
		h.first = time.Now()
	}
	h.held = append(h.held, heldRequest{ctx: ctx, serve: serve, out: out})
	h.mu.Unlock()
	return out
}

// Waiting is the number of requests waiting for Open and how long the
// oldest of them has waited (0 when none does).
func (h *Hold) Waiting() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.held) == 0 {
		return 0, 0
	}
	return len(h.held), time.Since(h.first)
}

// Held is the number of requests waiting for Open.
func (h *Hold) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held)
}

// Open serves the held requests one by one in arrival order, those that
// arrive meanwhile included, and then every request at once. Serving
// happens on the caller's goroutine without the hold's lock.
func (h *Hold) Open() {
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		if len(h.held) == 0 {
			h.held = nil
			h.open.Store(true)
			h.mu.Unlock()
			return
		}
		r := h.held[0]
		h.held[0] = heldRequest{}
		h.held = h.held[1:]
		h.mu.Unlock()
		if r.ctx.Err() != nil {
			r.out.CompleteClose()
			continue
		}
		h.forward(r.out, r.serve(r.ctx))
	}
}

// Close closes the connections of the held requests, refuses later ones,
// and closes those of served ones whose replies are still pending (what
// completes them may be shutting down too); it waits for nothing else.
func (h *Hold) Close() {
	h.mu.Lock()
	held := h.held
	first := !h.closed
	h.held, h.closed = nil, true
	h.mu.Unlock()
	if first {
		close(h.stop)
	}
	for _, r := range held {
		r.out.CompleteClose()
	}
	h.wg.Wait()
}

// forward completes out with what in carries, once in completes.
func (h *Hold) forward(out, in *Reply) {
	if in.ready() {
		Forward(in, out)
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		select {
		case <-in.done:
			Forward(in, out)
		case <-h.stop:
			out.CompleteClose()
		}
	}()
}
