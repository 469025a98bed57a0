package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Rewriting stored batches for the cleaner. A batch keeps its base
// offset, last offset delta, producer id, epoch, base sequence and leader
// epoch whatever it loses, so offsets are never renumbered and the
// idempotent-producer state rebuilt from headers stays the same (Kafka
// keeps them for the same reasons). Records keep their offset deltas and
// their bytes; only a new delete horizon changes their timestamp deltas.

// attrDeleteHorizon marks a batch whose base timestamp holds its delete
// horizon (KIP-534): set by the cleaning that first kept a tombstone, or
// the marker of a transaction with no records left, in the batch. Record
// timestamps stay base timestamp + delta.
const attrDeleteHorizon = 0x40

// DeleteHorizon reports the batch's delete horizon, if it has one.
func (h *BatchHeader) DeleteHorizon() (int64, bool) {
	if h.Attributes&attrDeleteHorizon == 0 {
		return 0, false
	}
	return h.BaseTimestamp, true
}

// CleanRecord is one record of a stored batch as the cleaner judges it.
// Its slices alias the batch or its decompression buffer and are valid
// only during the call that produced them.
type CleanRecord struct {
	Offset    int64
	Timestamp int64  // as a reader sees it (the batch's for LogAppendTime)
	Key       []byte // nil for a null key
	Tombstone bool   // the value is null
	raw       []byte // the record after its length prefix
	tsDelta   int64
	tsEnd     int // position in raw after the timestamp delta
}

// parseRecords decodes the records of a batch body (decompressed) into
// dst. It never panics: every length is checked, offset deltas must grow
// strictly within [0, LastOffsetDelta], and nothing may trail.
func parseRecords(body []byte, h *BatchHeader, dst []CleanRecord) ([]CleanRecord, error) {
	dst = dst[:0]
	p := 0
	prev := int64(-1)
	for i := int32(0); i < h.NumRecords; i++ {
		length, q := varintAt(body, p)
		if q < 0 || length < 1 || length > int64(len(body)-q) {
			return dst, fmt.Errorf("%w: record %d has a bad length", kerr.CorruptMessage, i)
		}
		end := q + int(length)
		rec := body[q:end]
		r := CleanRecord{raw: rec}
		var offDelta int64
		c := 1 // attributes
		r.tsDelta, c = varintAt(rec, c)
		r.tsEnd = c
		offDelta, c = varintAt(rec, c)
		keyLen, kc := varintAt(rec, c)
		switch {
		case kc < 0:
			c = -1
		case keyLen == -1:
			c = kc
		case keyLen < 0 || keyLen > int64(len(rec)-kc):
			c = -1
		default:
			r.Key = rec[kc : kc+int(keyLen) : kc+int(keyLen)]
			c = kc + int(keyLen)
		}
		if vl, vc := varintAt(rec, c); vc >= 0 && vl == -1 {
			r.Tombstone = true
		}
		c = skipBytesAt(rec, c, true) // value
		headers, c := varintAt(rec, c)
		if c >= 0 && (headers < 0 || headers > int64(len(rec)-c)) {
			c = -1
		}
		for j := int64(0); j < headers && c >= 0; j++ {
			c = skipBytesAt(rec, c, false)
			c = skipBytesAt(rec, c, true)
		}
		if c != len(rec) {
			return dst, fmt.Errorf("%w: record %d is malformed", kerr.CorruptMessage, i)
		}
		if offDelta <= prev || offDelta > int64(h.LastOffsetDelta) {
			return dst, fmt.Errorf("%w: record %d has offset delta %d", kerr.InvalidRecord, i, offDelta)
		}
		prev = offDelta
		r.Offset = h.BaseOffset + offDelta
		r.Timestamp = h.BaseTimestamp + r.tsDelta
		if h.LogAppendTime() {
			r.Timestamp = h.MaxTimestamp
		}
		dst = append(dst, r)
		p = end
	}
	if p != len(body) {
		return dst, fmt.Errorf("%w: %d bytes trail the last record", kerr.CorruptMessage, len(body)-p)
	}
	return dst, nil
}

// FilterOptions say how Filter writes what is kept of a batch.
type FilterOptions struct {
	// RetainEmpty writes a batch that keeps no record as a header
	// without records (same offsets, producer, epoch and sequence), as
	// Kafka keeps a producer's last batch and the last batch of a cleaned
	// range.
	RetainEmpty bool
	// Horizon is the delete horizon (now + delete.retention.ms) stamped
	// on a batch without one that keeps a tombstone, or that keeps
	// anything when MarkHorizon is set (the marker of a transaction with
	// no records left).
	Horizon     int64
	MarkHorizon bool
}

// FilterOutcome is what Filter wrote for a batch.
type FilterOutcome int

const (
	FilterDropped   FilterOutcome = iota // nothing
	FilterCopied                         // the batch unchanged
	FilterRewritten                      // fewer records, or a new delete horizon
	FilterEmptied                        // a header without records
)

// FilterResult describes one Filter call.
type FilterResult struct {
	Outcome FilterOutcome
	Records int // records read
	Kept    int // records written
}

// BatchFilter rewrites stored batches keeping the records a cleaner
// chooses. Its buffers are reused from call to call; one per goroutine.
type BatchFilter struct {
	recs []CleanRecord
	kept []int
	raw  []byte
}

// Filter appends to dst what is left of batch b (one whole stored batch)
// once keep has judged each of its records in order. A batch that keeps
// everything and needs no new delete horizon is copied byte for byte;
// otherwise it is rebuilt with the same codec. b's records are not
// validated beyond what decoding needs; an error leaves dst as it was.
func (f *BatchFilter) Filter(dst, b []byte, opts FilterOptions, keep func(*CleanRecord) bool) ([]byte, FilterResult, error) {
	var res FilterResult
	h, release, err := f.load(b)
	if err != nil {
		return dst, res, err
	}
	defer release()
	res.Records = len(f.recs)
	f.kept = f.kept[:0]
	tombstones := false
	for i := range f.recs {
		if keep(&f.recs[i]) {
			f.kept = append(f.kept, i)
			tombstones = tombstones || f.recs[i].Tombstone
		}
	}
	res.Kept = len(f.kept)
	_, hasHorizon := h.DeleteHorizon()
	stamp := !hasHorizon && (tombstones || opts.MarkHorizon)
	switch {
	case res.Kept == 0 && opts.RetainEmpty:
		res.Outcome = FilterEmptied
		return appendEmptyBatch(dst, &h), res, nil
	case res.Kept == 0:
		res.Outcome = FilterDropped
		return dst, res, nil
	case res.Kept == len(f.recs) && !stamp:
		res.Outcome = FilterCopied
		return append(dst, b...), res, nil
	}
	res.Outcome = FilterRewritten
	out, err := f.rebuild(dst, &h, stamp, opts.Horizon)
	if err != nil {
		return dst, res, err
	}
	return out, res, nil
}

// rebuild appends a batch of the kept records of h.
func (f *BatchFilter) rebuild(dst []byte, h *BatchHeader, stamp bool, horizon int64) ([]byte, error) {
	attrs := h.Attributes
	base := h.BaseTimestamp
	if stamp {
		attrs |= attrDeleteHorizon
		base = horizon
	}
	f.raw = f.raw[:0]
	maxTs := int64(-1)
	for i, k := range f.kept {
		r := &f.recs[k]
		createTs := h.BaseTimestamp + r.tsDelta
		if i == 0 || createTs > maxTs {
			maxTs = createTs
		}
		if !stamp {
			f.raw = binary.AppendVarint(f.raw, int64(len(r.raw)))
			f.raw = append(f.raw, r.raw...)
			continue
		}
		// The base timestamp moves to the horizon: shift the delta so
		// that base + delta stays the record's timestamp.
		delta := createTs - base
		n := 1 + varintLen(delta) + len(r.raw) - r.tsEnd
		f.raw = binary.AppendVarint(f.raw, int64(n))
		f.raw = append(f.raw, r.raw[0])
		f.raw = binary.AppendVarint(f.raw, delta)
		f.raw = append(f.raw, r.raw[r.tsEnd:]...)
	}
	if h.LogAppendTime() {
		maxTs = h.MaxTimestamp
	}
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	var err error
	if c := h.Compression(); c == CompressionNone {
		dst = append(dst, f.raw...)
	} else if dst, err = compressRecords(c, dst, f.raw); err != nil {
		return dst[:start], err
	}
	out := dst[start:]
	binary.BigEndian.PutUint64(out[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(len(out)-batchLengthOverhead))
	binary.BigEndian.PutUint32(out[offLeaderEpoch:], uint32(h.LeaderEpoch))
	out[offMagic] = 2
	binary.BigEndian.PutUint16(out[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(out[offLastOffsetDelt:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(out[offBaseTimestamp:], uint64(base))
	binary.BigEndian.PutUint64(out[offMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint64(out[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(out[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(out[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(out[offRecordCount:], uint32(len(f.kept)))
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return dst, nil
}

// appendEmptyBatch appends h as a batch without records, as Kafka writes
// one: uncompressed, no delete horizon, base and max timestamp the
// batch's max timestamp.
func appendEmptyBatch(dst []byte, h *BatchHeader) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, BatchHeaderSize)...)
	out := dst[start:]
	attrs := h.Attributes &^ (attrCompressionMask | attrDeleteHorizon)
	binary.BigEndian.PutUint64(out[offBaseOffset:], uint64(h.BaseOffset))
	binary.BigEndian.PutUint32(out[offBatchLength:], uint32(BatchHeaderSize-batchLengthOverhead))
	binary.BigEndian.PutUint32(out[offLeaderEpoch:], uint32(h.LeaderEpoch))
	out[offMagic] = 2
	binary.BigEndian.PutUint16(out[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(out[offLastOffsetDelt:], uint32(h.LastOffsetDelta))
	binary.BigEndian.PutUint64(out[offBaseTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(out[offMaxTimestamp:], uint64(h.MaxTimestamp))
	binary.BigEndian.PutUint64(out[offProducerID:], uint64(h.ProducerID))
	binary.BigEndian.PutUint16(out[offProducerEpoch:], uint16(h.ProducerEpoch))
	binary.BigEndian.PutUint32(out[offBaseSequence:], uint32(h.BaseSequence))
	binary.BigEndian.PutUint32(out[offRecordCount:], 0)
	binary.BigEndian.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return dst
}

func varintLen(v int64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutVarint(b[:], v)
}

// Scan calls fn with each record of batch b (one whole stored batch) in
// order until fn returns false.
func (f *BatchFilter) Scan(b []byte, fn func(*CleanRecord) bool) error {
	_, release, err := f.load(b)
	if err != nil {
		return err
	}
	defer release()
	for i := range f.recs {
		if !fn(&f.recs[i]) {
			break
		}
	}
	return nil
}

// load decodes the header and records of b into f.recs; release gives
// back the decompression buffer the records alias.
func (f *BatchFilter) load(b []byte) (BatchHeader, func(), error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, nil, err
	}
	if int(h.Length) != len(b) || h.Magic != 2 || h.NumRecords < 0 {
		return h, nil, fmt.Errorf("%w: not one whole v2 batch", kerr.CorruptMessage)
	}
	release := func() {}
	body := b[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone && h.NumRecords > 0 {
		out, err := decompress(c, body)
		if err != nil {
			return h, nil, fmt.Errorf("%w: %s batch does not decompress: %v", kerr.CorruptMessage, codecName(c), err)
		}
		release = func() { releaseBuffer(out) }
		body = out.b
	}
	if f.recs, err = parseRecords(body, &h, f.recs); err != nil {
		release()
		return h, nil, err
	}
	return h, release, nil
}
