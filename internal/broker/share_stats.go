package broker

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"

	"weir/internal/share"
)

// SharePartitionStats is one share partition's metrics (see share.Stats).
type SharePartitionStats struct {
	Group     string
	Topic     string
	Partition int32
	share.Stats
}

// ShareStats is a snapshot of the share coordinator's metrics, for an
// exporter: every share partition's, and how ShareFetch requests waited.
type ShareStats struct {
	Partitions []SharePartitionStats
	// Parked is the ShareFetch requests that found nothing to acquire and
	// waited; ParkedEmpty those of them that ended at MaxWaitMs with
	// nothing; ParkedTime the time they spent waiting.
	Parked      int64
	ParkedEmpty int64
	ParkedTime  time.Duration
}

// shareWaitStats counts parked ShareFetch requests.
type shareWaitStats struct {
	parked, empty, nanos atomic.Int64
}

func (s *shareWaitStats) record(d time.Duration, empty bool) {
	s.parked.Add(1)
	s.nanos.Add(int64(d))
	if empty {
		s.empty.Add(1)
	}
}

// ShareStats returns the share groups' metrics, partitions sorted by group,
// topic and partition.
func (b *Broker) ShareStats() ShareStats {
	c := b.shares
	c.mu.Lock()
	parts := make([]*sharePart, 0, len(c.parts))
	for _, sp := range c.parts {
		parts = append(parts, sp)
	}
	c.mu.Unlock()
	out := ShareStats{
		Parked:      c.waits.parked.Load(),
		ParkedEmpty: c.waits.empty.Load(),
		ParkedTime:  time.Duration(c.waits.nanos.Load()),
	}
	for _, sp := range parts {
		name := ""
		if t := b.lookupTopicID(sp.key.TopicID); t != nil {
			name = t.name
		}
		sp.mu.Lock()
		if sp.p != nil {
			out.Partitions = append(out.Partitions, SharePartitionStats{Group: sp.key.Group, Topic: name, Partition: sp.key.Partition, Stats: sp.p.Stats()})
		}
		sp.mu.Unlock()
	}
	slices.SortFunc(out.Partitions, func(a, b SharePartitionStats) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
