package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

// AbortedTxn is one entry of a segment's aborted-transaction index
// (Kafka's .txnindex): a transaction of ProducerID that started at
// FirstOffset and was aborted by the marker at LastOffset, and the last
// stable offset right after that marker (the first offset of the oldest
// transaction still open then, or LastOffset+1 when none was). The entry
// lives in the segment that holds its marker.
//
// A read_committed consumer drops the records of ProducerID from
// FirstOffset on until it reaches the marker at LastOffset. A search for
// the aborted transactions overlapping offsets [from, to) may stop at the
// first entry whose LastStableOffset is at or past to: every transaction
// with data below to had ended by then.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// txnIndexSuffix names a segment's aborted-transaction index. Its entries
// are Kafka's: 34 bytes each, big endian, (version int16 = 0, producer id
// int64, first offset int64, last offset int64, last stable offset int64),
// in marker order. A segment without aborted transactions has no file.
const (
	txnIndexSuffix    = ".txnindex"
	txnEntrySize      = 34
	txnEntryVersion   = 0
	txnIndexMaxFileSz = 64 << 20 // a sanity bound: two million aborts in one segment
)

var errBadTxnIndex = errors.New("log: aborted-transaction index does not match its segment")

func encodeTxnIndex(entries []AbortedTxn) []byte {
	b := make([]byte, 0, len(entries)*txnEntrySize)
	for _, e := range entries {
		b = binary.BigEndian.AppendUint16(b, txnEntryVersion)
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint64(b, uint64(e.FirstOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastOffset))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastStableOffset))
	}
	return b
}

// decodeTxnIndex decodes and checks the entries of a segment whose
// batches hold offsets [base, next): whole entries of version 0, producer
// ids not negative, each marker inside the segment and after the one
// before, the transaction starting at or before its marker (possibly in
// an earlier segment), the last stable offset at most one past its
// marker. Anything else means the file is
// stale or damaged and must be rebuilt. It never panics. (The last stable
// offset may lie before the transaction's start: another transaction
// that began earlier was still open.)
func decodeTxnIndex(b []byte, base, next int64) ([]AbortedTxn, error) {
	if len(b)%txnEntrySize != 0 {
		return nil, fmt.Errorf("%w: %d bytes is not a whole number of entries", errBadTxnIndex, len(b))
	}
	n := len(b) / txnEntrySize
	out := make([]AbortedTxn, 0, n)
	for i := range n {
		e := b[i*txnEntrySize:]
		if v := int16(binary.BigEndian.Uint16(e)); v != txnEntryVersion {
			return nil, fmt.Errorf("%w: entry %d has version %d", errBadTxnIndex, i, v)
		}
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(e[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(e[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(e[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(e[26:])),
		}
		switch {
		case t.ProducerID < 0 || t.FirstOffset < 0:
			return nil, fmt.Errorf("%w: entry %d has producer %d, first offset %d", errBadTxnIndex, i, t.ProducerID, t.FirstOffset)
		case t.LastOffset < base || t.LastOffset >= next || t.FirstOffset > t.LastOffset:
			return nil, fmt.Errorf("%w: entry %d marker at %d outside [%d, %d) or before its start %d", errBadTxnIndex, i, t.LastOffset, base, next, t.FirstOffset)
		case t.LastStableOffset < 0 || t.LastStableOffset > t.LastOffset+1:
			return nil, fmt.Errorf("%w: entry %d last stable offset %d past its marker %d", errBadTxnIndex, i, t.LastStableOffset, t.LastOffset)
		case len(out) > 0 && t.LastOffset <= out[len(out)-1].LastOffset:
			return nil, fmt.Errorf("%w: entry %d out of order", errBadTxnIndex, i)
		}
		out = append(out, t)
	}
	return out, nil
}

// loadTxnIndex reads a segment's aborted-transaction index; a missing
// file is an index without entries (segments without aborts have none).
func loadTxnIndex(prefix string, base, next int64) ([]AbortedTxn, error) {
	f, err := os.Open(prefix + txnIndexSuffix)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > txnIndexMaxFileSz {
		return nil, fmt.Errorf("%w: %d bytes", errBadTxnIndex, fi.Size())
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return decodeTxnIndex(b, base, next)
}

// writeTxnIndex replaces a segment's aborted-transaction index file, or
// removes it when there are no entries. The replacement is atomic (a
// temporary file, fsynced, renamed over it): unlike the offset indexes,
// which are checked against the segment, an index cut short by a crash
// would look like one with fewer aborts. The directory fsync of the
// checkpoint that then moves the recovery point makes the rename durable.
func writeTxnIndex(prefix string, entries []AbortedTxn) error {
	return writeTxnIndexWith(prefix, entries, nil, true)
}

// writeTxnIndexWith is writeTxnIndex whose last step (the rename, or the
// removal) runs through commit when it is set: a flush, which writes
// without the log's lock, commits under it and only if no truncation
// came in between, so that an index copied before a truncation never
// replaces the one the truncation wrote. The file is fsynced before the
// rename when sync is set.
func writeTxnIndexWith(prefix string, entries []AbortedTxn, commit func(func() error) error, sync bool) error {
	if commit == nil {
		commit = func(f func() error) error { return f() }
	}
	if len(entries) == 0 {
		return commit(func() error {
			if err := os.Remove(prefix + txnIndexSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			return nil
		})
	}
	tmp := prefix + txnIndexSuffix + tmpSuffix
	if err := writeFile(tmp, encodeTxnIndex(entries), sync); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	renamed := false
	err := commit(func() error {
		renamed = true
		return os.Rename(tmp, prefix+txnIndexSuffix)
	})
	if !renamed {
		_ = os.Remove(tmp)
	}
	return err
}

// tmpSuffix marks a file being written, to be renamed over its name; a
// crash may leave one, which recovery deletes.
const tmpSuffix = ".tmp"

// keepAborted returns the entries whose marker is below end, copying so
// that readers holding the old slice never see it change.
func keepAborted(entries []AbortedTxn, end int64) []AbortedTxn {
	n := 0
	for n < len(entries) && entries[n].LastOffset < end {
		n++
	}
	if n == len(entries) {
		return entries
	}
	return append([]AbortedTxn(nil), entries[:n]...)
}

// collectAborted appends to dst the entries of one segment's index that
// overlap [from, to): the transaction's marker at or past from and its
// start below to. done reports that an entry's last stable offset reached
// to, so no later segment can hold an overlapping transaction.
func collectAborted(dst, entries []AbortedTxn, from, to int64) (out []AbortedTxn, done bool) {
	for _, e := range entries {
		if e.LastOffset >= from && e.FirstOffset < to {
			dst = append(dst, e)
		}
		if e.LastStableOffset >= to {
			return dst, true
		}
	}
	return dst, false
}
