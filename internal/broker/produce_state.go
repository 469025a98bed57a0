package broker

import (
	"errors"

	wlog "weir/internal/log"
	"weir/internal/producer"
)

// appendOptions returns the append hooks for a produce to p: the leader
// epoch to stamp and the idempotent-producer check and record, which run
// under the log's append lock so they are atomic with the append.
func (b *Broker) appendOptions(p *partition) wlog.AppendOptions {
	return wlog.AppendOptions{LeaderEpoch: p.leaderEpoch.Load(), Guard: p.producers.Guard, Appended: p.producers.Appended}
}

// rebuildProducers replays the batch headers of p's log into its producer
// state, so a restarted broker still recognises retried batches.
func (b *Broker) rebuildProducers(p *partition) error {
	p.producers = producer.NewState(producer.Options{Now: b.now})
	return p.producers.Rebuild(p.log, p.log.StartOffset())
}

// asDuplicate reports whether err says the batch was already written, and
// with which offsets.
func asDuplicate(err error) (*producer.DuplicateError, bool) {
	var dup *producer.DuplicateError
	ok := errors.As(err, &dup)
	return dup, ok
}
