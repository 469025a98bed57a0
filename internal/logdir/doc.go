// Package logdir keeps the health of a broker's log directory: online, or
// offline after a write or sync of a log in it failed (a full or failing
// disk), and online again once it can take writes.
//
// # What it owns
//
// The directory's state and the probe that brings it back: while
// offline, every Interval it checks that the file system has MinFree
// bytes free and that a small file can be written, synced and removed
// there. Kafka marks a failed log directory offline until the broker
// restarts; weir comes back by itself when space returns, since a full
// disk is the common case and nothing in the logs is lost by it (a
// failed append leaves the log a valid prefix, internal/log).
//
// # What it does not own
//
// What offline means to the broker: produce answered KAFKA_STORAGE_ERROR
// at once, DescribeLogDirs reporting it, the controller asked to fence
// the broker so its leaderships move (internal/broker wires these
// through OnChange and Err). The logs report their failures through
// log.Options.OnIOError.
//
// # Concurrency
//
// Safe from any goroutine: a mutex (a leaf) guards the state. One probe
// goroutine runs while the directory is offline, owned by the Dir and
// stopped by Close; OnChange is called on it when the directory comes
// back, and on the goroutine of the failure that took it offline,
// with no lock held.
package logdir
