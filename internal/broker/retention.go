package broker

import (
	"time"
)

// retentionLoop deletes segments that retention.ms / retention.bytes no
// longer keep, every RetentionCheckInterval (Kafka's
// log.retention.check.interval.ms), until the broker closes.
func (b *Broker) retentionLoop(every time.Duration) {
	defer b.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			b.enforceRetention()
		}
	}
}

func (b *Broker) enforceRetention() {
	b.mu.RLock()
	var parts []*partition
	for _, t := range b.topics {
		parts = append(parts, localOnly(t.partitions)...)
	}
	b.mu.RUnlock()
	for _, p := range parts {
		var err error
		if p.rep != nil {
			_, err = p.rep.EnforceRetention()
		} else {
			_, err = p.log().EnforceRetention(p.highWatermark())
		}
		if err != nil {
			b.logger.Warn("retention failed", "topic", p.topic.name, "partition", p.index, "err", err)
		}
	}
}
