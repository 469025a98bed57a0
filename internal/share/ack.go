package share

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AckBatch is one AcknowledgementBatch of ShareFetch or ShareAcknowledge.
type AckBatch struct {
	First, Last int64
	// Types holds one type for the whole range, or one per offset.
	Types []AckType
}

// Acknowledge applies member's acknowledgements of one partition. They are
// all or nothing, as in Kafka: on error nothing changed and the error
// wraps the kerr value for the partition's AcknowledgeErrorCode:
//
//   - INVALID_REQUEST: a batch with no types, an unknown type, a type
//     count that matches neither 1 nor the range, a range that ends
//     before it starts, batches out of order or overlapping, or offsets
//     past the end offset;
//   - INVALID_RECORD_STATE: an offset that is not acquired by member (never
//     acquired, acknowledged, released, acquired by another member, or its
//     lock expired by now), or nothing is in flight.
//
// Offsets below the start offset are skipped: they are already done. On
// success it returns the durable change (RENEW changes nothing durable).
func (p *Partition) Acknowledge(member string, batches []AckBatch, now time.Time) (StateRecord, error) {
	if err := checkAckBatches(batches); err != nil {
		return StateRecord{}, err
	}
	nowN := now.UnixNano()
	for i := range batches {
		if err := p.checkHeld(member, &batches[i], nowN); err != nil {
			return StateRecord{}, err
		}
	}
	for i := range batches {
		b := &batches[i]
		if b.Last < p.start {
			continue
		}
		lo := max(b.First, p.start)
		if len(b.Types) == 1 {
			p.ackRange(lo, b.Last, b.Types[0], nowN)
			continue
		}
		p.ackOffsets(lo, b, nowN)
	}
	return p.finish(), nil
}

// ackOffsets applies per-offset types to [lo, b.Last] in one pass: the runs
// covering the range are rebuilt into a scratch list (one piece per stretch
// of equal type) that replaces them at once, so that alternating types
// cost linear time, not a split of the run list per offset.
func (p *Partition) ackOffsets(lo int64, b *AckBatch, now int64) {
	i, j := p.span(lo, b.Last)
	scratch := p.scratch[:0]
	for k := i; k < j; k++ {
		r := p.runs[k]
		for off := r.first; off <= r.last; {
			t := b.Types[off-b.First]
			end := off
			for end < r.last && b.Types[end+1-b.First] == t {
				end++
			}
			piece := r
			piece.first, piece.last = off, end
			p.ackRun(&piece, t, now)
			scratch = append(scratch, piece)
			off = end + 1
		}
	}
	p.runs = slices.Replace(p.runs, i, j, scratch...)
	clear(scratch)
	p.scratch = scratch[:0]
}

// checkAckBatches is the request validation Kafka does before looking at
// any record.
func checkAckBatches(batches []AckBatch) error {
	for i := range batches {
		b := &batches[i]
		switch {
		case b.First < 0 || b.First > b.Last:
			return fmt.Errorf("share: acknowledgement batch %d-%d: %w", b.First, b.Last, kerr.InvalidRequest)
		case len(b.Types) == 0:
			return fmt.Errorf("share: acknowledgement batch %d-%d has no type: %w", b.First, b.Last, kerr.InvalidRequest)
		case len(b.Types) > 1 && int64(len(b.Types)) != b.Last-b.First+1:
			return fmt.Errorf("share: acknowledgement batch %d-%d has %d types: %w", b.First, b.Last, len(b.Types), kerr.InvalidRequest)
		case i > 0 && b.First <= batches[i-1].Last:
			return fmt.Errorf("share: acknowledgement batch %d-%d overlaps or precedes the one before: %w", b.First, b.Last, kerr.InvalidRequest)
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew {
				return fmt.Errorf("share: acknowledgement type %d: %w", t, kerr.InvalidRequest)
			}
		}
	}
	return nil
}

// checkHeld verifies that member holds every offset of b from the start
// offset on, under a lock that has not expired at now.
func (p *Partition) checkHeld(member string, b *AckBatch, now int64) error {
	if b.Last < p.start {
		return nil
	}
	if p.start == p.next {
		return fmt.Errorf("share: acknowledgement of %d-%d with nothing in flight: %w", b.First, b.Last, kerr.InvalidRecordState)
	}
	lo := max(b.First, p.start)
	if lo >= p.next || b.Last >= p.next {
		return fmt.Errorf("share: acknowledgement of %d-%d past the end offset %d: %w", b.First, b.Last, p.next-1, kerr.InvalidRequest)
	}
	for i := p.index(lo); i < len(p.runs) && p.runs[i].first <= b.Last; i++ {
		r := &p.runs[i]
		switch {
		case r.state != Acquired:
			return fmt.Errorf("share: offset %d is %s, not acquired: %w", max(r.first, lo), r.state, kerr.InvalidRecordState)
		case r.deadline <= now:
			return fmt.Errorf("share: lock on offset %d expired: %w", max(r.first, lo), kerr.InvalidRecordState)
		case r.member != member:
			return fmt.Errorf("share: offset %d is acquired by another member: %w", max(r.first, lo), kerr.InvalidRecordState)
		}
	}
	return nil
}

// ackRange applies t to [first, last], all acquired by the caller.
func (p *Partition) ackRange(first, last int64, t AckType, now int64) {
	i, j := p.span(first, last)
	for k := i; k < j; k++ {
		p.ackRun(&p.runs[k], t, now)
	}
}

// ackRun applies t to r, acquired by the caller.
func (p *Partition) ackRun(r *run, t AckType, now int64) {
	n := r.last - r.first + 1
	switch t {
	case AckRenew:
		r.deadline = now + int64(p.cfg.LockDuration)
		p.stats.renewed += n
	case AckAccept:
		r.state, r.member, r.deadline = Acknowledged, "", 0
		p.stats.acknowledged += n
		p.touch(r.first, r.last)
	case AckRelease:
		p.stats.released += n
		p.releaseRun(r)
	default: // AckReject, AckGap
		r.state, r.member, r.deadline = Archived, "", 0
		p.stats.rejected += n
		p.stats.archived += n
		p.touch(r.first, r.last)
	}
}
