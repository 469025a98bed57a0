package replica

// Waiter is a reader parked until something it reads may have changed: a
// consumer's or follower's fetch below MinBytes, a ShareFetch with nothing
// to acquire. Whoever changes the thing (an append, a high watermark
// move, a leadership change, an acknowledgement) calls Wake; the parked
// reader selects on C and reads again. Wake never blocks and coalesces:
// wakes that come while the reader is busy leave one token.
type Waiter struct {
	C chan struct{}
}

// NewWaiter returns a waiter with no wake pending.
func NewWaiter() *Waiter { return &Waiter{C: make(chan struct{}, 1)} }

// Wake leaves a token in C unless one is there already.
func (w *Waiter) Wake() {
	select {
	case w.C <- struct{}{}:
	default:
	}
}
