package cleaner

import (
	"context"
	"math"
	"sync"
	"time"
)

// throttle keeps the cleaner's read and write I/O, all workers together,
// under log.cleaner.io.max.bytes.per.second on average, as Kafka's
// Throttler does: it measures the rate over windows of checkEvery and,
// past the limit, has the caller sleep for as long as the window should
// have lasted. Its lock is held only for the arithmetic; callers sleep
// without it.
type throttle struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error

	mu    sync.Mutex
	rate  float64 // bytes per second; +Inf: no limit
	start time.Time
	bytes float64
	slept time.Duration // total, for tests and metrics
}

const checkEvery = 300 * time.Millisecond

func newThrottle(rate float64, now func() time.Time, sleep func(context.Context, time.Duration) error) *throttle {
	return &throttle{now: now, sleep: sleep, rate: rate, start: now()}
}

func (t *throttle) setRate(rate float64) {
	t.mu.Lock()
	t.rate = rate
	t.mu.Unlock()
}

// wait accounts n bytes of I/O and sleeps if the rate is over the limit.
func (t *throttle) wait(ctx context.Context, n int) error {
	t.mu.Lock()
	if t.rate <= 0 || math.IsInf(t.rate, 1) || t.rate >= math.MaxFloat64 {
		t.mu.Unlock()
		return nil
	}
	t.bytes += float64(n)
	now := t.now()
	elapsed := now.Sub(t.start)
	var d time.Duration
	if elapsed >= checkEvery || elapsed < 0 && t.bytes > t.rate*checkEvery.Seconds() {
		if want := time.Duration(t.bytes / t.rate * float64(time.Second)); want > elapsed {
			d = want - elapsed
		}
		t.start, t.bytes = now.Add(d), 0
		t.slept += d
	}
	t.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return t.sleep(ctx, d)
}

// sleepCtx sleeps for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
