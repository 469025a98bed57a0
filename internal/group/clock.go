package group

import (
	"time"

	"weir/internal/clock"
)

// Clock is the coordinator's source of time. Session timeouts, rebalance
// timeouts, the initial rebalance delay and offset expiry all run on it, so
// a test can drive them with a ManualClock.
type Clock = clock.Clock

// Timer is a pending AfterFunc call.
type Timer = clock.Timer

// ManualClock is a Clock that moves only when Advance is called.
type ManualClock = clock.Manual

// SystemClock returns the wall clock.
func SystemClock() Clock { return clock.System() }

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock { return clock.NewManual(start) }
