package parallel

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDoCallsEachIndexOnceWithinTheBound(t *testing.T) {
	for _, tc := range []struct {
		name       string
		n, workers int
	}{
		{"empty", 0, 4},
		{"one", 1, 4},
		{"serial", 50, 1},
		{"no workers", 5, 0},
		{"more workers than work", 3, 16},
		{"bounded", 1000, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := make([]int, tc.n)
			var running, peak atomic.Int64
			Do(tc.n, tc.workers, func(i int) {
				r := running.Add(1)
				for {
					p := peak.Load()
					if r <= p || peak.CompareAndSwap(p, r) {
						break
					}
				}
				time.Sleep(10 * time.Microsecond)
				mu.Lock()
				seen[i]++
				mu.Unlock()
				running.Add(-1)
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("index %d called %d times", i, c)
				}
			}
			if bound := int64(max(tc.workers, 1)); peak.Load() > bound {
				t.Fatalf("%d calls at once, want at most %d", peak.Load(), bound)
			}
			if running.Load() != 0 {
				t.Fatalf("Do returned with %d calls running", running.Load())
			}
		})
	}
}

func TestDoRunsConcurrently(t *testing.T) {
	// Four calls that each wait for all four to have started finish only
	// if they run at once.
	var started sync.WaitGroup
	started.Add(4)
	done := make(chan struct{})
	go func() {
		Do(4, 4, func(int) {
			started.Done()
			started.Wait()
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("four calls with four workers did not run at once")
	}
}
