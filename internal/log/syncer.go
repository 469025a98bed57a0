package log

import (
	"container/heap"
	"sync"
	"time"
)

// DefaultSyncWorkers is the pool size NewSyncer uses when asked for none.
// Workers spend their time blocked in fsync; a few of them let a slow
// fsync on one log overlap with other logs' group commits.
const DefaultSyncWorkers = 4

// Syncer does the background work of many logs with a fixed pool of
// goroutines: group-commit fsyncs for WaitDurable, flush.messages and
// flush.ms, sealing segments (fsync and index write), the periodic recovery
// checkpoint, and closing files of deleted segments once their grace
// period is over. A log costs the Syncer nothing while it has no such work:
// logs are visited only when they ask (a waiter, flush.messages, a roll, a
// config change), every min(1s, flush.ms) while they hold unsynced data or
// deleted files, and once more when the checkpoint interval is up if only
// their checkpoint is behind.
//
// A Log opened without a Syncer starts a private one with a single worker,
// which is the same thing as the log's own goroutine.
//
// Concurrency: the pool's goroutines belong to the Syncer; Close stops them
// and waits for them. At most one worker works on a given log at a time,
// so a log's passes never overlap; a log that asks again while a pass runs
// gets another pass right after (so every waiter is covered by an fsync
// that started after it asked). s.mu is a leaf lock taken after a log's mu,
// never before it.
type Syncer struct {
	workers int

	mu sync.Mutex
	// Logs waiting for a worker, first come first served; the ones that
	// asked (a WaitDurable caller, flush.messages, a roll) go before the
	// ones whose time came, so that waiters are not stuck behind the
	// periodic passes of many idle-ish logs.
	asked, due logQueue
	timed      timedLogs // logs with unfinished work, by when to look again
	timerAt    time.Time // when timer fires; zero when it is not armed
	started    bool
	closed     bool
	idle       sync.Cond // broadcast when a pass of a detaching log ends

	timer *time.Timer
	kick  chan struct{} // each token wakes one idle worker; room for all of them
	stop  chan struct{}
	wg    sync.WaitGroup
}

// syncState is a Log's bookkeeping in its Syncer, guarded by the Syncer's
// mu.
type syncState struct {
	queued   bool // waiting in asked or due (stale entries elsewhere are skipped)
	inAsked  bool // waiting in asked
	running  bool // a worker is running a pass
	again    bool // asked for a pass while one was running
	detached bool // closed: no further passes
	heapIdx  int  // position in timed, -1 when absent
	due      time.Time
}

// NewSyncer starts a Syncer with the given number of workers
// (DefaultSyncWorkers when workers < 1). Close it after every Log that uses
// it is closed.
func NewSyncer(workers int) *Syncer {
	s := newSyncer(workers)
	s.start()
	return s
}

func newSyncer(workers int) *Syncer {
	if workers < 1 {
		workers = DefaultSyncWorkers
	}
	s := &Syncer{
		workers: workers,
		timer:   time.NewTimer(time.Hour),
		kick:    make(chan struct{}, workers),
		stop:    make(chan struct{}),
	}
	s.timer.Stop()
	s.idle.L = &s.mu
	return s
}

// start launches the workers; a private Syncer of a lazy log starts only
// once the log is first written.
func (s *Syncer) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return
	}
	s.started = true
	s.wg.Add(s.workers)
	for range s.workers {
		go s.work()
	}
}

// Close stops the workers and waits for them. Logs still open keep
// working, but nothing flushes them in the background any more and
// WaitDurable on them waits for its context; Log.Flush and Log.Close still
// flush. Close is idempotent.
func (s *Syncer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	s.wg.Wait()
	s.timer.Stop()
	return nil
}

func (s *Syncer) work() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		case <-s.timer.C:
			s.dispatchDue(time.Now())
		}
		for {
			l := s.next()
			if l == nil {
				break
			}
			l.syncPass()
			s.finish(l)
		}
	}
}

// request asks for a pass over l as soon as a worker is free.
func (s *Syncer) request(l *Log) {
	s.mu.Lock()
	woke := !s.closed && s.enqueueLocked(l, true)
	s.mu.Unlock()
	if woke {
		s.wake()
	}
}

// schedule asks for a pass over l at due unless one is already planned
// earlier.
func (s *Syncer) schedule(l *Log, due time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &l.sync
	if st.detached || s.closed {
		return
	}
	if st.heapIdx >= 0 {
		if !due.Before(st.due) {
			return
		}
		st.due = due
		heap.Fix(&s.timed, st.heapIdx)
	} else {
		st.due = due
		heap.Push(&s.timed, l)
	}
	if s.timerAt.IsZero() || due.Before(s.timerAt) {
		s.timerAt = due
		s.timer.Reset(time.Until(due))
	}
}

// enqueueLocked queues l for a pass (in asked or due) unless it waits
// already, or a pass over it is running: then that pass is repeated. A log
// waiting in due that asks moves ahead to asked. It reports whether a
// worker should be woken.
func (s *Syncer) enqueueLocked(l *Log, asked bool) bool {
	st := &l.sync
	switch {
	case st.detached:
		return false
	case st.running:
		st.again = true
		return false
	case st.queued && (st.inAsked || !asked):
		return false
	}
	st.queued = true
	st.inAsked = asked
	if asked {
		s.asked.push(l)
	} else {
		s.due.push(l)
	}
	return true
}

func (s *Syncer) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// dispatchDue queues the logs whose time has come and re-arms the timer
// for the next one.
func (s *Syncer) dispatchDue(now time.Time) {
	s.mu.Lock()
	for len(s.timed) > 0 && !s.timed[0].sync.due.After(now) {
		l := heap.Pop(&s.timed).(*Log)
		s.enqueueLocked(l, false)
	}
	s.timerAt = time.Time{}
	if len(s.timed) > 0 {
		s.timerAt = s.timed[0].sync.due
		s.timer.Reset(s.timerAt.Sub(now))
	}
	s.mu.Unlock()
}

// next takes the next waiting log for a pass, asked before due, waking
// another worker if more are waiting. nil when there is nothing to do or
// the Syncer is closing.
func (s *Syncer) next() *Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.closed {
		q := &s.asked
		if len(*q) == 0 {
			q = &s.due
		}
		if len(*q) == 0 {
			return nil
		}
		l := q.pop()
		st := &l.sync
		if !st.queued {
			continue // already served from the other queue
		}
		st.queued, st.inAsked = false, false
		if st.detached {
			continue
		}
		st.running = true
		if len(s.asked)+len(s.due) > 0 {
			s.wake()
		}
		return l
	}
	return nil
}

// finish ends a pass over l, queueing another when l asked during it.
func (s *Syncer) finish(l *Log) {
	s.mu.Lock()
	st := &l.sync
	st.running = false
	if st.detached {
		s.idle.Broadcast()
	} else if st.again {
		st.again = false
		s.enqueueLocked(l, true)
	}
	s.mu.Unlock()
}

// detach removes l for good and waits for a pass in progress to end. The
// caller must not hold l.mu.
func (s *Syncer) detach(l *Log) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &l.sync
	st.detached = true
	st.again = false
	if st.heapIdx >= 0 {
		heap.Remove(&s.timed, st.heapIdx)
	}
	for st.running {
		s.idle.Wait()
	}
}

// logQueue is a FIFO of logs.
type logQueue []*Log

func (q *logQueue) push(l *Log) { *q = append(*q, l) }

func (q *logQueue) pop() *Log {
	l := (*q)[0]
	(*q)[0] = nil
	*q = (*q)[1:]
	if len(*q) == 0 {
		*q = nil
	}
	return l
}

// timedLogs is a min-heap of logs by sync.due.
type timedLogs []*Log

func (h timedLogs) Len() int           { return len(h) }
func (h timedLogs) Less(i, j int) bool { return h[i].sync.due.Before(h[j].sync.due) }
func (h timedLogs) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].sync.heapIdx = i
	h[j].sync.heapIdx = j
}
func (h *timedLogs) Push(x any) {
	l := x.(*Log)
	l.sync.heapIdx = len(*h)
	*h = append(*h, l)
}
func (h *timedLogs) Pop() any {
	old := *h
	l := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	l.sync.heapIdx = -1
	return l
}
