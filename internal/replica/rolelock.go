package replica

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// roleLock is a reader/writer lock in 12 bytes (sync.RWMutex takes 24),
// which keeps a Replica, one per hosted partition, in the 80-byte size
// class. Readers (appends and fetch handling) are many and short;
// writers (role and epoch changes, truncation, min.insync.replicas) are
// rare, so a writer that finds readers inside waits for them by
// yielding, then sleeping, rather than on a semaphore.
//
// A writer holds w for its whole hold and adds writerBit to n, which
// makes n negative: a reader that then counts itself in sees it, counts
// itself out and waits on w for the writer to finish. New readers are
// thus held off while a writer waits, as with sync.RWMutex. Not
// reentrant: a reader must not take it again while a writer may be
// waiting.
type roleLock struct {
	w sync.Mutex
	n atomic.Int32 // readers inside, plus writerBit while a writer holds or waits
}

const writerBit = -1 << 30

// RLock takes the lock for reading.
func (l *roleLock) RLock() {
	for l.n.Add(1) < 0 {
		l.n.Add(-1)
		l.w.Lock() // the writer's hold
		l.w.Unlock()
	}
}

// RUnlock releases a read hold.
func (l *roleLock) RUnlock() {
	if v := l.n.Add(-1); v == -1 || v == writerBit-1 {
		panic("replica: RUnlock of an unlocked roleLock")
	}
}

// Lock takes the lock for writing: it waits for other writers, then
// for the readers inside to leave.
func (l *roleLock) Lock() {
	l.w.Lock()
	l.n.Add(writerBit)
	for i := 0; l.n.Load() != writerBit; i++ {
		switch {
		case i < 64:
			runtime.Gosched()
		default:
			time.Sleep(time.Duration(min(i-63, 100)) * 10 * time.Microsecond)
		}
	}
}

// Unlock releases the write hold.
func (l *roleLock) Unlock() {
	l.n.Add(-writerBit)
	l.w.Unlock()
}
