package sharegroup

import (
	"container/heap"
	"sync"
	"time"
)

// timers runs the share coordinator's timed work on one goroutine:
// acquisition lock expiries, member session timeouts, and the release of
// a share session whose connection closed. Anyone may arm a timer; arming
// never blocks, so it may be done under any share lock. A timer that fires
// late, or that was superseded, is harmless: each fire function checks
// what is due at the time it runs.
type timers struct {
	now func() time.Time

	mu    sync.Mutex
	queue timerHeap
	wake  chan struct{}

	stop    chan struct{}
	stopped chan struct{}
}

type timerEntry struct {
	at   time.Time
	fire func(now time.Time)
}

type timerHeap []timerEntry

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = timerEntry{}
	*h = old[:len(old)-1]
	return e
}

func newTimers(now func() time.Time) *timers {
	return &timers{now: now, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// arm schedules fire at at (a zero at means now).
func (t *timers) arm(at time.Time, fire func(now time.Time)) {
	t.mu.Lock()
	heap.Push(&t.queue, timerEntry{at: at, fire: fire})
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// run is the timer goroutine; close stops it.
func (t *timers) run() {
	defer close(t.stopped)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := t.now()
		var due []timerEntry
		var next time.Time
		t.mu.Lock()
		for t.queue.Len() > 0 && !t.queue[0].at.After(now) {
			due = append(due, heap.Pop(&t.queue).(timerEntry))
		}
		if t.queue.Len() > 0 {
			next = t.queue[0].at
		}
		t.mu.Unlock()
		for _, e := range due {
			e.fire(now)
		}
		if len(due) > 0 {
			continue
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(now), time.Millisecond)
		}
		timer.Reset(wait)
		select {
		case <-timer.C:
		case <-t.wake:
			// Reset discards a stale expiry (Go 1.23 timer semantics).
		case <-t.stop:
			return
		}
	}
}

func (t *timers) close() {
	close(t.stop)
	<-t.stopped
}
