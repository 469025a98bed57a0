package replica

import (
	"context"
	"time"
)

// ExpireISR is Kafka's isr-expiration task; it runs until ctx ends, on a
// goroutine its caller owns. Every maxLag()/2 (replica.lag.time.max.ms,
// read again each round so a dynamic change applies; DefaultMaxLag when
// not positive) each replica that led returns checks whether a follower
// fell out of its ISR (MaybeShrinkISR). Expansion needs no task: a
// follower's fetch proposes it.
func ExpireISR(ctx context.Context, maxLag func() time.Duration, led func() []*Replica) {
	for {
		every := maxLag() / 2
		if every <= 0 {
			every = DefaultMaxLag / 2
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		for _, r := range led() {
			r.MaybeShrinkISR()
		}
	}
}
