package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"weir/internal/cleaner"
	"weir/internal/config"
	"weir/internal/sharestate"
)

// The log cleaner (internal/cleaner) gets every partition log this node
// holds, leader or follower, as Kafka cleans every replica on its own,
// once the log has records below its high watermark: at open for a log
// that has records, else at its first high watermark above zero
// (OnHighWatermark), so that a never-written partition costs the cleaner
// nothing (an entry there is about 280 bytes, more than the rest of an
// idle partition). It compacts those whose cleanup.policy includes compact (the internal
// topic __consumer_offsets among them), never
// at or past the replica's high watermark, since a follower may still
// truncate records above it. Its checkpoint lives in the data directory.

// newCleaner makes the cleaner from the broker's log.cleaner.* settings;
// Start starts its workers once the registry is loaded.
func (b *Broker) newCleaner() error {
	c, err := cleaner.New(b.settings().Cleaner(), cleaner.Options{Logger: b.logger, Now: b.now})
	if err != nil {
		return err
	}
	b.cleaner = c
	return nil
}

// Where a partition's log stands with the cleaner (partition.cleaning).
const (
	notCleaned  = iota // not handed over yet
	cleaned            // handed over
	cleanerDone        // the log closed: never handed over again
)

// cleanWhenWritten hands the partition to the cleaner the first time its
// log has records below the high watermark hw; a no-op (one atomic load)
// after that. Called at open and on high watermark moves.
func (b *Broker) cleanWhenWritten(p *partition, hw int64) {
	if hw <= 0 || p.cleaning.Load() != notCleaned {
		return
	}
	b.cleanMu.Lock()
	defer b.cleanMu.Unlock()
	if p.cleaning.Load() != notCleaned {
		return
	}
	p.cleaning.Store(cleaned)
	b.cleanPartition(p)
}

// cleanPartition hands a partition with a log and a replica to the
// cleaner. __share_group_state is never handed over, whatever its
// cleanup.policy (clusters of earlier versions created it compacted):
// a key's records there are a snapshot and deltas on it, which
// compaction would break; its coordinator trims it (sharestate).
func (b *Broker) cleanPartition(p *partition) {
	if p.topic.name == sharestate.Topic {
		return
	}
	err := b.cleaner.Add(cleaner.Partition{
		TopicPartition: cleaner.TopicPartition{Topic: p.topic.name, Partition: p.index},
		Dir:            b.cfg.DataDir,
		Log:            p.log(),
		Stable:         p.highWatermark,
	})
	if err != nil {
		b.logger.Warn("partition not handed to the log cleaner", "topic", p.topic.name, "partition", p.index, "err", err)
	}
}

// stopCleaning takes a partition from the cleaner before its log closes,
// waiting for a round of it in progress; a deleted partition's checkpoint
// entry goes too.
func (b *Broker) stopCleaning(p *partition, deleted bool) {
	b.cleanMu.Lock()
	was := p.cleaning.Swap(cleanerDone)
	b.cleanMu.Unlock()
	if was != cleaned || p.topic.name == sharestate.Topic {
		return
	}
	tp := cleaner.TopicPartition{Topic: p.topic.name, Partition: p.index}
	if !deleted {
		b.cleaner.Remove(tp)
		return
	}
	if err := b.cleaner.Delete(tp); err != nil {
		b.logger.Warn("cleaner checkpoint not updated", "topic", p.topic.name, "partition", p.index, "err", err)
	}
}

// reconfigureCleaner applies a dynamic change of log.cleaner.* settings.
func (b *Broker) reconfigureCleaner(old, next *config.Broker) {
	if old.Cleaner() == next.Cleaner() {
		return
	}
	if err := b.cleaner.Reconfigure(next.Cleaner()); err != nil {
		b.logger.Warn("log cleaner settings not applied", "err", err)
	}
}

// CleanerCollector exports the log cleaner's metrics.
func (b *Broker) CleanerCollector() prometheus.Collector { return b.cleaner.Collector() }
