package share

// counters are a partition's running totals, in records.
type counters struct {
	acquired     int64
	redelivered  int64
	acknowledged int64
	released     int64
	rejected     int64
	archived     int64
	lockExpiries int64
	renewed      int64
}

// Stats is a partition's metrics at one moment. The gauges describe the
// window now; the totals count records since the Partition was created or
// restored. The broker exports them (per group, topic and partition).
type Stats struct {
	StartOffset int64
	EndOffset   int64

	// InFlight is the offsets between the SPSO and the SPEO, whatever
	// their state.
	InFlight int64
	// Acquired is the records under a lock now.
	Acquired int64
	// Available is the records in flight waiting to be delivered again.
	Available int64

	// AcquiredTotal is the records handed out by Acquire.
	AcquiredTotal int64
	// Redeliveries is the records handed out with a delivery count above 1.
	Redeliveries int64
	// AcknowledgedTotal is the records accepted.
	AcknowledgedTotal int64
	// ReleasedTotal is the records released by RELEASE or a member's
	// departure.
	ReleasedTotal int64
	// RejectedTotal is the records rejected (REJECT, or GAP).
	RejectedTotal int64
	// ArchivedTotal is the records archived for any reason: rejected,
	// delivery count limit, missing from the log, aborted.
	ArchivedTotal int64
	// LockExpiries is the records whose lock expired.
	LockExpiries int64
	// RenewedTotal is the records whose lock was renewed.
	RenewedTotal int64
}

// Stats returns the partition's metrics.
func (p *Partition) Stats() Stats {
	s := Stats{
		StartOffset:       p.start,
		EndOffset:         p.next - 1,
		InFlight:          p.next - p.start,
		AcquiredTotal:     p.stats.acquired,
		Redeliveries:      p.stats.redelivered,
		AcknowledgedTotal: p.stats.acknowledged,
		ReleasedTotal:     p.stats.released,
		RejectedTotal:     p.stats.rejected,
		ArchivedTotal:     p.stats.archived,
		LockExpiries:      p.stats.lockExpiries,
		RenewedTotal:      p.stats.renewed,
	}
	for i := range p.runs {
		r := &p.runs[i]
		switch r.state {
		case Acquired:
			s.Acquired += r.last - r.first + 1
		case Available:
			s.Available += r.last - r.first + 1
		}
	}
	return s
}

// Lag is what DescribeShareGroupOffsets v1 reports as Lag: the records
// from the SPSO up to the high watermark that are not delivery complete
// (neither acknowledged nor archived). Offsets archived as missing from
// the log count as complete.
func (p *Partition) Lag(highWatermark int64) int64 {
	if highWatermark <= p.start {
		return 0
	}
	lag := highWatermark - p.start
	for i := range p.runs {
		r := &p.runs[i]
		if r.first >= highWatermark {
			break
		}
		if r.state.terminal() {
			lag -= min(r.last, highWatermark-1) - r.first + 1
		}
	}
	return lag
}
