package producer

import (
	"fmt"

	"weir/internal/log"
)

// HeaderScanner is what Rebuild reads, batch headers with the markers of
// control batches: *log.Log implements it.
type HeaderScanner interface {
	ScanMarkers(from int64, fn func(h *log.BatchHeader, m *log.Marker) bool) error
}

// Rebuild replaces the state with the one the log implies: it forgets
// every producer, records the header of every batch from offset from (the
// log start offset, normally) to the log end, in offset order, and then
// expires producers as ExpireProducers does, as Kafka drops expired
// producers when it loads its state at startup. A restarted broker calls
// it before serving the partition, and so does a follower after
// truncating its log, since truncation may remove batches the state
// remembers.
//
// The result equals the state that live appends built, with one known
// difference: when a producer expired and later came back within the same
// epoch, the replay also retains its batches from before the expiry. That
// only lets a retry of one of those batches be recognised as a duplicate.
//
// A log opened with the State as its Options.Producers restores and
// rebuilds it itself (from snapshots); Rebuild is for a State kept
// outside the log.
//
// On error the state is left empty and the error returned; the partition
// should not take appends until a rebuild succeeds.
func (s *State) Rebuild(src HeaderScanner, from int64) error {
	s.Reset()
	err := src.ScanMarkers(from, func(h *log.BatchHeader, m *log.Marker) bool {
		s.Apply(h, m)
		return true
	})
	if err != nil {
		s.Reset()
		return fmt.Errorf("producer: rebuild from offset %d: %w", from, err)
	}
	s.ExpireProducers()
	return nil
}
