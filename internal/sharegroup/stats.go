package sharegroup

import (
	"cmp"
	"slices"
	"sync/atomic"
	"time"

	"weir/internal/share"
)

// PartitionStats is one share partition's metrics (see share.Stats).
type PartitionStats struct {
	Group     string
	Topic     string
	Partition int32
	share.Stats
}

// Stats is a snapshot of the share groups' metrics, for an exporter:
// every share partition's, and how ShareFetch requests waited.
type Stats struct {
	Partitions []PartitionStats
	// Parked is the ShareFetch requests that found nothing to acquire and
	// waited; ParkedEmpty those of them that ended at MaxWaitMs with
	// nothing; ParkedTime the time they spent waiting.
	Parked      int64
	ParkedEmpty int64
	ParkedTime  time.Duration
}

// waitStats counts parked ShareFetch requests.
type waitStats struct {
	parked, empty, nanos atomic.Int64
}

func (s *waitStats) record(d time.Duration, empty bool) {
	s.parked.Add(1)
	s.nanos.Add(int64(d))
	if empty {
		s.empty.Add(1)
	}
}

// Stats returns the share groups' metrics, partitions sorted by group,
// topic and partition.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	parts := make([]*sharePartition, 0, len(m.parts))
	for _, sp := range m.parts {
		parts = append(parts, sp)
	}
	m.mu.Unlock()
	out := Stats{
		Parked:      m.waits.parked.Load(),
		ParkedEmpty: m.waits.empty.Load(),
		ParkedTime:  time.Duration(m.waits.nanos.Load()),
	}
	for _, sp := range parts {
		name, _ := m.host.TopicName(sp.key.TopicID)
		sp.mu.Lock()
		if sp.p != nil {
			out.Partitions = append(out.Partitions, PartitionStats{Group: sp.key.Group, Topic: name, Partition: sp.key.Partition, Stats: sp.p.Stats()})
		}
		sp.mu.Unlock()
	}
	slices.SortFunc(out.Partitions, func(a, b PartitionStats) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}
