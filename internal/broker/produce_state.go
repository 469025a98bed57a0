package broker

import (
	wlog "weir/internal/log"
)

// appendOptions returns the append hooks for a produce to p: the leader
// epoch to stamp and the idempotent-producer checks.
func (b *Broker) appendOptions(p *partition) wlog.AppendOptions {
	return wlog.AppendOptions{LeaderEpoch: p.leaderEpoch.Load()}
}
