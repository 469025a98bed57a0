package replica

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// TestRoleLockSize: the lock stays at 12 bytes, which is what keeps a
// Replica in the 80-byte size class (TestReplicaSize).
func TestRoleLockSize(t *testing.T) {
	if n := unsafe.Sizeof(roleLock{}); n > 12 {
		t.Fatalf("roleLock is %d B, want at most 12", n)
	}
}

// blocks reports whether f is still running after d (it then waits for
// it to finish, after release).
func blocks(t *testing.T, d time.Duration, f func(), release func()) bool {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
		return false
	case <-time.After(d):
	}
	release()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still blocked 10 s after the release")
	}
	return true
}

// TestRoleLockExclusion: each pairing of holds, as sync.RWMutex has
// them: readers share, a writer excludes readers and writers, a writer
// waits for the readers inside, and a writer waiting holds off new
// readers.
func TestRoleLockExclusion(t *testing.T) {
	const wait = 50 * time.Millisecond
	t.Run("readers share", func(t *testing.T) {
		var l roleLock
		l.RLock()
		if blocks(t, wait, func() { l.RLock(); l.RUnlock() }, l.RUnlock) {
			t.Fatal("a second reader waited for the first")
		}
	})
	t.Run("writer excludes a reader", func(t *testing.T) {
		var l roleLock
		l.Lock()
		if !blocks(t, wait, func() { l.RLock(); l.RUnlock() }, l.Unlock) {
			t.Fatal("a reader got in while a writer held the lock")
		}
	})
	t.Run("writer excludes a writer", func(t *testing.T) {
		var l roleLock
		l.Lock()
		if !blocks(t, wait, func() { l.Lock(); l.Unlock() }, l.Unlock) {
			t.Fatal("a second writer got in")
		}
	})
	t.Run("writer waits for the readers", func(t *testing.T) {
		var l roleLock
		l.RLock()
		l.RLock()
		if !blocks(t, wait, func() { l.Lock(); l.Unlock() }, func() { l.RUnlock(); l.RUnlock() }) {
			t.Fatal("a writer got in with readers inside")
		}
	})
	t.Run("waiting writer holds off new readers", func(t *testing.T) {
		var l roleLock
		l.RLock()
		locked := make(chan struct{})
		go func() { l.Lock(); close(locked) }()
		for l.n.Load() >= 0 { // until the writer waits
			time.Sleep(time.Millisecond)
		}
		if !blocks(t, wait, func() { l.RLock(); l.RUnlock() }, func() {
			l.RUnlock()
			<-locked
			l.Unlock()
		}) {
			t.Fatal("a new reader got in past a waiting writer")
		}
	})
	t.Run("unlocked RUnlock panics", func(t *testing.T) {
		var l roleLock
		defer func() {
			if recover() == nil {
				t.Fatal("RUnlock of an unlocked lock did not panic")
			}
		}()
		l.RUnlock()
	})
}

// TestRoleLockStress: readers and writers together; a writer changes
// two fields that readers must always see equal, and that no other
// writer may see half changed. Under -race, it also checks that the
// holds order the plain accesses.
func TestRoleLockStress(t *testing.T) {
	var (
		l       roleLock
		a, b    int // written only under Lock
		readers atomic.Int32
		wg      sync.WaitGroup
	)
	const rounds = 2000
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l.RLock()
				readers.Add(1)
				if a != b {
					t.Errorf("a reader saw %d and %d", a, b)
				}
				readers.Add(-1)
				l.RUnlock()
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds / 10 {
				l.Lock()
				if n := readers.Load(); n != 0 {
					t.Errorf("a writer got in beside %d readers", n)
				}
				a++
				b++
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if a != b || a != 2*rounds/10 {
		t.Fatalf("after the writers: %d and %d, want %d", a, b, 2*rounds/10)
	}
	if v := l.n.Load(); v != 0 {
		t.Fatalf("lock word %d after every hold ended, want 0", v)
	}
}
