package parallel

import (
	"sync"
	"sync/atomic"
)

// Do calls fn(i) for every i in [0, n) on at most workers goroutines and
// returns when all calls have. Iterations are independent: fn must be
// safe to call concurrently. With n or workers under 2 it runs the loop
// on the caller's goroutine.
func Do(n, workers int, fn func(i int)) {
	workers = min(workers, n)
	if workers < 2 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
