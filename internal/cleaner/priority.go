package cleaner

import (
	"errors"
	"fmt"
)

// MaxNice is the largest weir.log.cleaner.nice: Linux's lowest CPU
// priority.
const MaxNice = 19

// errNoPriority is what lowering a thread's priority returns where the
// platform has no per-thread priority.
var errNoPriority = errors.New("per-thread CPU priority is not supported on this platform")

// validNice reports a weir.log.cleaner.nice a cleaner cannot run with.
func validNice(nice int) error {
	if nice < 0 || nice > MaxNice {
		return fmt.Errorf("cleaner: weir.log.cleaner.nice %d is not in [0, %d]", nice, MaxNice)
	}
	return nil
}

// DefaultNice is weir.log.cleaner.nice's default.
const DefaultNice = MaxNice
