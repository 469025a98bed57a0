package group

import "sync/atomic"

// Log attribute keys, shared by every log line of the package.
const (
	attrGroup      = "group"
	attrMember     = "member"
	attrEpoch      = "epoch"
	attrGeneration = "generation"
)

// Stats are cumulative counters of coordinator events, for metrics.
type Stats struct {
	// ClassicRebalances counts classic generations completed (join phases
	// that ended with members).
	ClassicRebalances uint64
	// ConsumerEpochBumps counts consumer-group epoch increments, each of
	// which computes a new target assignment.
	ConsumerEpochBumps uint64
	// StreamsEpochBumps counts streams-group epoch increments, each of
	// which computes a new task assignment.
	StreamsEpochBumps uint64
	// MembersExpired counts members removed because their session timed
	// out (classic, consumer and streams).
	MembersExpired uint64
	// OffsetsCommitted counts committed partitions.
	OffsetsCommitted uint64
	// OffsetsExpired counts offsets removed by retention.
	OffsetsExpired uint64
	// AppendErrors counts failed Store.Append calls.
	AppendErrors uint64
}

type stats struct {
	classicRebalances  atomic.Uint64
	consumerEpochBumps atomic.Uint64
	streamsEpochBumps  atomic.Uint64
	membersExpired     atomic.Uint64
	offsetsCommitted   atomic.Uint64
	offsetsExpired     atomic.Uint64
	appendErrors       atomic.Uint64
}

func (s *stats) snapshot() Stats {
	return Stats{
		ClassicRebalances:  s.classicRebalances.Load(),
		ConsumerEpochBumps: s.consumerEpochBumps.Load(),
		StreamsEpochBumps:  s.streamsEpochBumps.Load(),
		MembersExpired:     s.membersExpired.Load(),
		OffsetsCommitted:   s.offsetsCommitted.Load(),
		OffsetsExpired:     s.offsetsExpired.Load(),
		AppendErrors:       s.appendErrors.Load(),
	}
}
