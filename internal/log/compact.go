package log

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// What the log offers its cleaner (internal/cleaner): a view of the closed
// segments for planning, their batches for reading, and a way to replace a
// group of them with a cleaned segment (swap.go). The cleaner never takes
// the log's lock for longer than an in-memory copy and never touches the
// active segment.

// errNullKeyCompacted is Kafka's answer to a record without a key on a
// compacted topic.
var errNullKeyCompacted = fmt.Errorf("%w: Compacted topic cannot accept message without key", kerr.InvalidRecord)

// ErrStaleClean reports that the log changed under a cleaning (truncation,
// retention, DeleteRecords or Close removed or rewrote a segment it was
// cleaning): the cleaned segment was dropped and the log is as it was.
var ErrStaleClean = errors.New("log: segments changed while being cleaned")

// Cleaning holds a compacted topic's cleaner settings. The log does not
// act on them; the cleaner reads them from the log's Config.
type Cleaning struct {
	// DeleteRetention (delete.retention.ms) is how long a tombstone, and
	// the marker of a transaction whose records are all gone, stays after
	// the cleaning that first kept it.
	DeleteRetention time.Duration
	// MinCompactionLag (min.compaction.lag.ms): a segment holding a record
	// younger than this is not cleaned yet.
	MinCompactionLag time.Duration
	// MaxCompactionLag (max.compaction.lag.ms; negative: unbounded): a log
	// whose oldest uncleaned segment starts with a record older than this
	// is cleaned whatever its dirty ratio.
	MaxCompactionLag time.Duration
	// MinCleanableRatio (min.cleanable.dirty.ratio) is the share of the
	// log that must be uncleaned before it is cleaned.
	MinCleanableRatio float64
}

// DefaultCleaning returns Kafka's defaults.
func DefaultCleaning() Cleaning {
	return Cleaning{DeleteRetention: 24 * time.Hour, MaxCompactionLag: -1, MinCleanableRatio: 0.5}
}

// SegmentSummary describes one closed segment for the cleaner's plans.
type SegmentSummary struct {
	Base  int64 // offset the segment starts at (its name)
	Next  int64 // offset after its last batch: the next segment's base
	Bytes int64
	// MaxTimestamp is the largest batch max timestamp, -1 when none.
	MaxTimestamp int64
	// FirstTimestamp is the max timestamp of the first batch (Kafka's
	// first-batch timestamp, for max.compaction.lag.ms), -1 when unknown.
	FirstTimestamp int64
}

// CleanerView is a copy of what the cleaner plans with.
type CleanerView struct {
	// Segments are the closed segments (every one but the active
	// segment), oldest first; they follow on from each other exactly.
	Segments   []SegmentSummary
	ActiveBase int64 // the active segment's base offset: never cleaned
	LogStart   int64
	EndOffset  int64
	// RecoveryPoint: everything below it was fsynced. Only segments
	// wholly below it are cleaned, so that no flush of theirs is in
	// flight when they are swapped.
	RecoveryPoint int64
	// HighWatermark is the one last noted (NoteHighWatermark), -1 none.
	HighWatermark int64
	// Truncations counts truncations since Open; TruncatedTo is the
	// lowest offset one cut to (math.MaxInt64: none). A cleaner whose
	// checkpoint passed TruncatedTo must clean from there again.
	Truncations uint64
	TruncatedTo int64
	Bytes       int64 // every segment, the active one included
	Config      Config
}

// CleanerView copies the segment list under the lock and then reads each
// closed segment's first batch header without it.
func (l *Log) CleanerView() (CleanerView, error) {
	l.mu.Lock()
	if l.closed() || l.closing() {
		l.mu.Unlock()
		return CleanerView{}, ErrClosed
	}
	v := CleanerView{
		ActiveBase:    l.leo,
		LogStart:      l.logStart,
		EndOffset:     l.leo,
		RecoveryPoint: l.recoveryPoint,
		HighWatermark: l.hw.Load(),
		Truncations:   l.truncations,
		TruncatedTo:   l.truncatedTo,
		Config:        *l.cfg.Load().Config,
	}
	var views []view
	for i, s := range l.segs {
		v.Bytes += s.size
		if i == len(l.segs)-1 {
			v.ActiveBase = s.base
			break
		}
		views = append(views, s.view())
		v.Segments = append(v.Segments, SegmentSummary{Base: s.base, Next: s.next, Bytes: s.size, MaxTimestamp: s.maxTs, FirstTimestamp: -1})
	}
	l.mu.Unlock()
	defer unpinViews(views)
	for i, sv := range views {
		var h header
		if err := sv.readHeader(0, sv.size, &h); err == nil {
			v.Segments[i].FirstTimestamp = h.maxTs
		}
	}
	return v, nil
}

// closedViews returns views of the closed segments that hold offsets in
// [from, to). mu is taken.
func (l *Log) closedViews(from, to int64) ([]view, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed() || l.closing() {
		return nil, ErrClosed
	}
	var out []view
	for _, s := range l.segs[:max(len(l.segs)-1, 0)] {
		if s.next > from && s.base < to {
			out = append(out, s.view())
		}
	}
	return out, nil
}

// EachCleanableBatch calls fn with every batch of the closed segments that
// ends at or past from and starts below to, in offset order, together
// with the base offset of its segment. b is valid only during the call;
// an error from fn stops the walk and is returned. Reads use buf (grown
// when a batch does not fit) and no lock; a segment deleted meanwhile
// stays readable for FileDeleteDelay.
func (l *Log) EachCleanableBatch(from, to int64, buf []byte, fn func(segBase int64, b []byte) error) ([]byte, error) {
	views, err := l.closedViews(from, to)
	if err != nil {
		return buf, err
	}
	defer unpinViews(views)
	if cap(buf) < BatchHeaderSize {
		buf = make([]byte, 0, 64<<10)
	}
	for _, v := range views {
		pos := int64(0)
		if from > v.base {
			if pos, err = v.offsetPos(from); err != nil {
				return buf, err
			}
		}
		if _, err := v.file(); err != nil {
			return buf, err
		}
		for pos < v.size {
			n := min(int64(cap(buf)), v.size-pos)
			buf = buf[:n]
			if _, err := v.f.ReadAt(buf, pos); err != nil && !errors.Is(err, io.EOF) {
				return buf, fmt.Errorf("log: read %s at %d: %w", v.f.Name(), pos, err)
			}
			p := 0
			for p < len(buf) {
				rest := buf[p:]
				if len(rest) < BatchHeaderSize {
					if p == 0 {
						return buf, fmt.Errorf("log: %s: partial batch header at %d", v.f.Name(), pos)
					}
					break
				}
				h, err := ParseBatchHeader(rest)
				if err != nil || h.Magic != 2 || int64(h.Length) > v.size-pos-int64(p) {
					return buf, fmt.Errorf("log: %s: invalid batch header at %d", v.f.Name(), pos+int64(p))
				}
				if int(h.Length) > len(rest) {
					if p == 0 { // larger than the buffer: grow it
						buf = make([]byte, 0, h.Length)
					}
					break
				}
				if h.BaseOffset >= to {
					return buf, nil
				}
				if err := fn(v.base, rest[:h.Length]); err != nil {
					return buf, err
				}
				p += int(h.Length)
			}
			pos += int64(p)
		}
	}
	return buf, nil
}

// TracksTransactions reports whether the log keeps an aborted-transaction
// index (it was opened with Options.Producers). Without one a cleaner
// cannot tell aborted transactions from committed ones.
func (l *Log) TracksTransactions() bool { return l.env().producers != nil }

// validateReplicated checks a batch copied from a leader. The leader's
// cleaner may have rewritten it: fewer records than its offset range
// (gaps between offset deltas) or none at all, as Kafka keeps a batch's
// offsets when compaction empties it. Everything else is checked as
// ValidateBatch checks a replicated batch.
func validateReplicated(b []byte, now time.Time) (BatchInfo, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return BatchInfo{}, err
	}
	if h.NumRecords == h.LastOffsetDelta+1 {
		return ValidateBatch(b, nil, now)
	}
	return validateCleaned(b, h)
}

// validateCleaned checks a batch the cleaner rewrote (h parsed from b):
// length, magic, CRC, codec, records that parse with offset deltas
// strictly increasing within [0, LastOffsetDelta], nothing trailing. A
// batch without records has no body.
func validateCleaned(b []byte, h BatchHeader) (BatchInfo, error) {
	info := BatchInfo{BatchHeader: h, MaxRecordTimestamp: h.MaxTimestamp}
	switch {
	case int(h.Length) != len(b):
		return info, fmt.Errorf("%w: batch length field says %d bytes, got %d", kerr.CorruptMessage, h.Length, len(b))
	case h.Magic != 2:
		return info, fmt.Errorf("%w: magic %d, only v2 record batches are accepted", kerr.InvalidRecord, h.Magic)
	case crc32.Checksum(b[offAttributes:], castagnoli) != h.CRC:
		return info, fmt.Errorf("%w: CRC-32C mismatch", kerr.CorruptMessage)
	case h.NumRecords < 0 || h.LastOffsetDelta < 0 || h.NumRecords > h.LastOffsetDelta:
		return info, fmt.Errorf("%w: %d records for last offset delta %d", kerr.InvalidRecord, h.NumRecords, h.LastOffsetDelta)
	case h.Compression() > CompressionZstd:
		return info, fmt.Errorf("%w: compression codec %d", kerr.UnsupportedCompressionType, h.Compression())
	}
	body := b[BatchHeaderSize:]
	if h.NumRecords == 0 {
		if len(body) != 0 {
			return info, fmt.Errorf("%w: a batch without records has %d bytes of body", kerr.CorruptMessage, len(body))
		}
		return info, nil
	}
	if c := h.Compression(); c != CompressionNone {
		out, err := decompress(c, body)
		if err != nil {
			return info, fmt.Errorf("%w: %s batch does not decompress: %v", kerr.CorruptMessage, codecName(c), err)
		}
		defer releaseBuffer(out)
		body = out.b
	}
	var recs []CleanRecord
	recs, err := parseRecords(body, &h, recs)
	if err != nil {
		return info, err
	}
	info.MaxRecordTimestamp = math.MinInt64
	for i := range recs {
		if recs[i].Timestamp > info.MaxRecordTimestamp {
			info.MaxRecordTimestamp = recs[i].Timestamp
			info.OffsetDeltaOfMaxTimestamp = int32(recs[i].Offset - h.BaseOffset)
		}
		info.NullKey = info.NullKey || recs[i].Key == nil
	}
	return info, nil
}
