package broker

import (
	"errors"

	wlog "weir/internal/log"
	"weir/internal/producer"
)

// appendOptions returns the append hooks for a produce to p: the leader
// epoch to stamp and the producer check, which runs under the log's
// append lock so that it is atomic with the append (the log applies the
// written batch to the producer state itself).
func (b *Broker) appendOptions(p *partition) wlog.AppendOptions {
	return wlog.AppendOptions{LeaderEpoch: p.leaderEpoch(), Guard: p.producers().Guard}
}

// asDuplicate reports whether err says the batch was already written, and
// with which offsets.
func asDuplicate(err error) (*producer.DuplicateError, bool) {
	var dup *producer.DuplicateError
	ok := errors.As(err, &dup)
	return dup, ok
}
