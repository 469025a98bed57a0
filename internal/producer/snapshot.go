package producer

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"weir/internal/log"
)

var _ log.ProducerState = (*State)(nil)

// ErrBadSnapshot is wrapped by LoadSnapshot's errors.
var ErrBadSnapshot = errors.New("producer: snapshot does not decode")

// The encoding of a State inside a log snapshot (the log frames it with
// its offset and a CRC): version byte 1, the producer count (uint32), then
// per producer, by id: producer id int64, epoch int16, last timestamp
// int64, coordinator epoch int32, first offset of the ongoing transaction
// int64 (-1: none), the number of retained batches (one byte, at most
// BatchesRetained) and each batch, oldest first: first and last sequence
// int32, first and last offset int64, timestamp int64. Big endian. Unlike
// Kafka's snapshots, which keep one batch per producer, all five retained
// batches are kept, so duplicates are recognised after a restart as
// before it.
const (
	snapshotVersion   = 1
	snapshotEntrySize = 8 + 2 + 8 + 4 + 8 + 1
	snapshotBatchSize = 4 + 4 + 8 + 8 + 8
)

// AppendSnapshot appends the encoding of the state to dst.
func (s *State) AppendSnapshot(dst []byte) []byte {
	t := s.read()
	ids := make([]int64, 0, len(t.producers))
	for id := range t.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	dst = append(dst, snapshotVersion)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(ids)))
	for _, id := range ids {
		e := t.producers[id]
		dst = binary.BigEndian.AppendUint64(dst, uint64(id))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.lastTs))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.coordEpoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.txnFirst))
		dst = append(dst, byte(e.n))
		for _, b := range e.batches[:e.n] {
			dst = binary.BigEndian.AppendUint32(dst, uint32(b.FirstSeq))
			dst = binary.BigEndian.AppendUint32(dst, uint32(b.LastSeq))
			dst = binary.BigEndian.AppendUint64(dst, uint64(b.FirstOffset))
			dst = binary.BigEndian.AppendUint64(dst, uint64(b.LastOffset))
			dst = binary.BigEndian.AppendUint64(dst, uint64(b.Timestamp))
		}
	}
	return dst
}

// LoadSnapshot replaces the state with the one b encodes. It checks what
// the state relies on (producer ids increasing and not negative, at most
// BatchesRetained batches each with offsets in order, transaction offsets
// -1 or not negative, nothing trailing) and on any error leaves the state
// empty. It never panics.
func (s *State) LoadSnapshot(b []byte) error {
	s.Reset()
	if err := s.loadSnapshot(b); err != nil {
		s.Reset()
		return err
	}
	return nil
}

func (s *State) loadSnapshot(b []byte) error {
	if len(b) < 5 || b[0] != snapshotVersion {
		return fmt.Errorf("%w: header", ErrBadSnapshot)
	}
	count := binary.BigEndian.Uint32(b[1:])
	b = b[5:]
	if uint64(count)*snapshotEntrySize > uint64(len(b)) {
		return fmt.Errorf("%w: %d producers in %d bytes", ErrBadSnapshot, count, len(b))
	}
	prev := int64(-1)
	for i := range count {
		if len(b) < snapshotEntrySize {
			return fmt.Errorf("%w: producer %d cut short", ErrBadSnapshot, i)
		}
		id := int64(binary.BigEndian.Uint64(b))
		e := &entry{
			epoch:      int16(binary.BigEndian.Uint16(b[8:])),
			lastTs:     int64(binary.BigEndian.Uint64(b[10:])),
			coordEpoch: int32(binary.BigEndian.Uint32(b[18:])),
			txnFirst:   int64(binary.BigEndian.Uint64(b[22:])),
			n:          int(b[30]),
		}
		b = b[snapshotEntrySize:]
		if id <= prev || e.txnFirst < -1 || e.n > BatchesRetained || len(b) < e.n*snapshotBatchSize {
			return fmt.Errorf("%w: producer entry %d", ErrBadSnapshot, i)
		}
		prev = id
		for j := range e.n {
			bm := BatchMetadata{
				FirstSeq:    int32(binary.BigEndian.Uint32(b)),
				LastSeq:     int32(binary.BigEndian.Uint32(b[4:])),
				FirstOffset: int64(binary.BigEndian.Uint64(b[8:])),
				LastOffset:  int64(binary.BigEndian.Uint64(b[16:])),
				Timestamp:   int64(binary.BigEndian.Uint64(b[24:])),
			}
			b = b[snapshotBatchSize:]
			if bm.FirstOffset < 0 || bm.LastOffset < bm.FirstOffset || (j > 0 && bm.FirstOffset <= e.batches[j-1].LastOffset) {
				return fmt.Errorf("%w: producer %d batch %d offsets", ErrBadSnapshot, id, j)
			}
			e.batches[j] = bm
		}
		s.put(id, e)
		if e.txnFirst >= 0 {
			t := s.write()
			t.ongoing = append(t.ongoing, ongoingTxn{first: e.txnFirst, pid: id})
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("%w: %d bytes trail the producers", ErrBadSnapshot, len(b))
	}
	if s.t != nil {
		slices.SortFunc(s.t.ongoing, func(a, b ongoingTxn) int { return cmpOngoing(a, b) })
	}
	return nil
}

func cmpOngoing(a, b ongoingTxn) int {
	return cmp.Or(cmp.Compare(a.first, b.first), cmp.Compare(a.pid, b.pid))
}
