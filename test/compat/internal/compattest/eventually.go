package compattest

import (
	"testing"
	"time"
)

// Eventually calls fn every 100ms until it returns nil, failing the test with
// fn's last error once timeout has passed.
func Eventually(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := fn()
		if err == nil {
			return
		}
		select {
		case <-deadline.C:
			t.Fatalf("not true after %v: %v", timeout, err)
		case <-tick.C:
		}
	}
}
