package config

import (
	"weir/internal/cleaner"
)

// Cleaner returns the log cleaner's settings (log.cleaner.*).
func (b *Broker) Cleaner() cleaner.Config {
	return cleaner.Config{
		Enabled:             b.Bool(CleanerEnable),
		Threads:             int(b.Int(CleanerThreads)),
		DedupeBufferSize:    b.Long(CleanerDedupeBufferSize),
		LoadFactor:          b.mustValue(CleanerIOBufferLoadFactor).f,
		IOBufferSize:        int(b.Int(CleanerIOBufferSize)),
		IOMaxBytesPerSecond: b.mustValue(CleanerIOMaxBytesPerSec).f,
		Backoff:             b.Millis(CleanerBackoffMs),
		Nice:                int(b.Int(WeirLogCleanerNice)),
	}
}

// checkCleanerChange is LogCleaner.validateReconfiguration: a dynamic
// change of log.cleaner.threads keeps at least one thread and at most
// doubles or halves the count; the new settings must let a cleaner run.
func checkCleanerChange(cur, next *Broker) *Error {
	n, c := int(next.Int(CleanerThreads)), int(cur.Int(CleanerThreads))
	switch {
	case n < 1:
		return invalidRequest("Log cleaner threads should be at least 1")
	case n < c/2:
		return invalidRequest("Log cleaner threads cannot be reduced to less than half the current value " + itoa(int64(c)))
	case n > c*2:
		return invalidRequest("Log cleaner threads cannot be increased to more than double the current value " + itoa(int64(c)))
	}
	if err := next.Cleaner().Validate(); err != nil {
		return invalidRequest(err.Error())
	}
	return nil
}

// cleanerChanged reports whether a dynamic change touches the cleaner.
func cleanerChanged(cur, next *Broker) bool {
	return cur.Cleaner() != next.Cleaner()
}
