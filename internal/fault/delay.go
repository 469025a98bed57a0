package fault

import (
	"sync"
	"time"

	"weir/internal/server"
)

// Delay returns a reply that completes like r, d later. With d <= 0 it
// returns r itself. The goroutine that waits is counted in wg, so its
// owner can wait for it; stop, when closed, completes the reply at once
// (the owner is shutting down) so nothing waits on a timer.
func Delay(r *server.Reply, d time.Duration, stop <-chan struct{}, wg *sync.WaitGroup) *server.Reply {
	if d <= 0 {
		return r
	}
	out := server.NewPendingReply()
	t := time.NewTimer(d)
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-t.C:
		case <-stop:
			t.Stop()
		}
		server.Forward(r, out)
	}()
	return out
}
