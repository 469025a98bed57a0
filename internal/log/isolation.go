package log

import "fmt"

// Isolation is a fetch's isolation level, numbered as Kafka's
// IsolationLevel field.
type Isolation int8

// The isolation levels.
const (
	// ReadUncommitted reads up to the high watermark, aborted
	// transactions included.
	ReadUncommitted Isolation = 0
	// ReadCommitted reads up to the last stable offset and names the
	// aborted transactions in the range read, so the consumer can drop
	// their records.
	ReadCommitted Isolation = 1
)

// IsolatedRead is a consumer's read: the file ranges, the last stable
// offset when the read was made, and for read_committed the aborted
// transactions that overlap the batches returned (nil otherwise, and when
// nothing was returned).
type IsolatedRead struct {
	ReadResult
	LastStableOffset int64
	Aborted          []AbortedTxn
}

// ReadIsolated is a consumer's Read at an isolation level: read_uncommitted
// reads below hw (the replica's high watermark), read_committed below the
// last stable offset, and collects the aborted transactions overlapping
// what it returns from the segments' aborted-transaction indexes, not from
// the records: from the segment holding offset onwards, every entry whose
// marker is at or past offset and whose transaction starts below the
// offset after the last batch returned, stopping at the first entry whose
// last stable offset reaches it. Errors are Read's.
func (l *Log) ReadIsolated(dst []FileRange, offset, maxBytes, hw int64, iso Isolation) (IsolatedRead, error) {
	l.mu.Lock()
	lso := l.lastStableLocked(hw)
	l.mu.Unlock()
	var out IsolatedRead
	out.LastStableOffset = lso
	switch iso {
	case ReadUncommitted:
		res, err := l.Read(dst, offset, maxBytes, hw)
		out.ReadResult = res
		return out, err
	case ReadCommitted:
	default:
		return out, fmt.Errorf("log: isolation level %d", iso)
	}
	res, next, err := l.read(dst, offset, maxBytes, lso, true, nil)
	out.ReadResult = res
	if err != nil || res.Bytes == 0 {
		return out, err
	}
	out.Aborted = l.AbortedTransactions(offset, next)
	return out, nil
}

// AbortedTransactions returns the aborted transactions that overlap
// offsets [from, to): their marker at or past from and their first offset
// below to, in marker order, read from the aborted-transaction indexes of
// the segments from the one holding from on (a transaction may start in an
// earlier segment than its marker). The search stops at the first entry
// whose last stable offset reaches to. A cleaner uses it to drop the
// records of aborted transactions; read_committed reads name them to the
// consumer.
func (l *Log) AbortedTransactions(from, to int64) []AbortedTxn {
	if from >= to {
		return nil
	}
	l.mu.Lock()
	if len(l.segs) == 0 {
		l.mu.Unlock()
		return nil
	}
	i := l.segmentFor(from)
	lists := make([][]AbortedTxn, 0, len(l.segs)-i)
	for _, s := range l.segs[i:] {
		lists = append(lists, s.ix.aborted)
	}
	l.mu.Unlock()
	var out []AbortedTxn
	for _, entries := range lists {
		var done bool
		if out, done = collectAborted(out, entries, from, to); done {
			break
		}
	}
	return out
}

// offsetAtBoundary is the offset of the batch starting at position pos (a
// batch boundary), or the offset after the segment's last batch when pos
// is its end.
func (v *view) offsetAtBoundary(pos int64) (int64, error) {
	if pos >= v.size {
		return v.next, nil
	}
	var h header
	if err := v.readHeader(pos, v.size, &h); err != nil {
		return 0, err
	}
	return h.base, nil
}
