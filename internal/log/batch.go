package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Layout of a v2 record batch header. Every multi-byte field is big endian.
// The CRC covers everything from the attributes field to the end of the
// batch, so the broker may rewrite the base offset and the partition leader
// epoch without recomputing it.
const (
	offBaseOffset     = 0  // int64
	offBatchLength    = 8  // int32: bytes after this field
	offLeaderEpoch    = 12 // int32
	offMagic          = 16 // int8
	offCRC            = 17 // uint32, CRC-32C of [offAttributes, end)
	offAttributes     = 21 // int16
	offLastOffsetDelt = 23 // int32
	offBaseTimestamp  = 27 // int64
	offMaxTimestamp   = 35 // int64
	offProducerID     = 43 // int64
	offProducerEpoch  = 51 // int16
	offBaseSequence   = 53 // int32
	offRecordCount    = 57 // int32

	// BatchHeaderSize is the size of a v2 batch header; records follow it.
	BatchHeaderSize = 61
	// batchLengthOverhead is the part of a batch not counted by batchLength.
	batchLengthOverhead = 12
)

// Attribute bits of a v2 batch.
const (
	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression codecs as numbered in the batch attributes.
const (
	CompressionNone   = 0
	CompressionGzip   = 1
	CompressionSnappy = 2
	CompressionLZ4    = 3
	CompressionZstd   = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded fixed part of a v2 record batch.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // whole batch size in bytes, header included
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	NumRecords      int32
}

// LastOffset is the offset of the last record of the batch.
func (h *BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch.
func (h *BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression is the codec number of the batch.
func (h *BatchHeader) Compression() int { return int(h.Attributes & attrCompressionMask) }

// IsTransactional reports whether the batch belongs to a transaction.
func (h *BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports whether the batch is a control batch (transaction markers).
func (h *BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// LogAppendTime reports whether the batch timestamps are broker append times.
func (h *BatchHeader) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// ParseBatchHeader decodes the header at the start of b. It checks only that
// the header is present and that its length field is sane; it does not check
// that the whole batch is in b.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	var h BatchHeader
	if len(b) < BatchHeaderSize {
		return h, fmt.Errorf("%w: batch of %d bytes is shorter than a v2 header", kerr.CorruptMessage, len(b))
	}
	h.BaseOffset = int64(binary.BigEndian.Uint64(b[offBaseOffset:]))
	h.Length = int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	h.LeaderEpoch = int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
	h.Magic = int8(b[offMagic])
	h.CRC = binary.BigEndian.Uint32(b[offCRC:])
	h.Attributes = int16(binary.BigEndian.Uint16(b[offAttributes:]))
	h.LastOffsetDelta = int32(binary.BigEndian.Uint32(b[offLastOffsetDelt:]))
	h.BaseTimestamp = int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
	h.MaxTimestamp = int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
	h.ProducerID = int64(binary.BigEndian.Uint64(b[offProducerID:]))
	h.ProducerEpoch = int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
	h.BaseSequence = int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
	h.NumRecords = int32(binary.BigEndian.Uint32(b[offRecordCount:]))
	if h.Length < BatchHeaderSize-batchLengthOverhead || h.Length > math.MaxInt32-batchLengthOverhead {
		return h, fmt.Errorf("%w: batch length field %d is out of range", kerr.CorruptMessage, h.Length)
	}
	h.Length += batchLengthOverhead
	return h, nil
}

// ValidationRules are the topic settings a batch is checked against.
type ValidationRules struct {
	// MaxBatchBytes is max.message.bytes: the largest batch accepted.
	MaxBatchBytes int
	// LogAppendTime is message.timestamp.type=LogAppendTime.
	LogAppendTime bool
	// TimestampBeforeMax and TimestampAfterMax bound how far a CreateTime
	// record timestamp may lie before or after the broker's clock
	// (message.timestamp.before.max.ms / after.max.ms); negative disables.
	TimestampBeforeMax time.Duration
	TimestampAfterMax  time.Duration
}

// BatchInfo describes a validated batch.
type BatchInfo struct {
	BatchHeader
	// MaxRecordTimestamp is the largest record timestamp seen in the records
	// and OffsetOfMaxTimestamp the offset delta of the first record carrying it.
	MaxRecordTimestamp        int64
	OffsetDeltaOfMaxTimestamp int32
	// Marker is the transaction marker of a control batch.
	Marker Marker
	// NullKey: some record has a null key, which a compacted topic
	// refuses.
	NullKey bool
}

// ValidateBatch checks that b holds exactly one well-formed v2 record batch:
// sizes consistent, magic 2, CRC-32C correct, records parse and their count
// and offset deltas agree with the header, timestamps within the rules. It
// decompresses compressed batches to check their records but never changes
// b. Errors wrap the kerr code a broker should answer with.
func ValidateBatch(b []byte, rules *ValidationRules, now time.Time) (BatchInfo, error) {
	var info BatchInfo
	h, err := ParseBatchHeader(b)
	if err != nil {
		return info, err
	}
	info.BatchHeader = h
	if int(h.Length) != len(b) {
		return info, fmt.Errorf("%w: batch length field says %d bytes, got %d", kerr.CorruptMessage, h.Length, len(b))
	}
	if h.Magic != 2 {
		return info, fmt.Errorf("%w: magic %d, only v2 record batches are accepted", kerr.InvalidRecord, h.Magic)
	}
	if rules != nil && rules.MaxBatchBytes > 0 && len(b) > rules.MaxBatchBytes {
		return info, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, len(b), rules.MaxBatchBytes)
	}
	if crc32.Checksum(b[offAttributes:], castagnoli) != h.CRC {
		return info, fmt.Errorf("%w: CRC-32C mismatch", kerr.CorruptMessage)
	}
	if h.NumRecords <= 0 {
		return info, fmt.Errorf("%w: batch holds %d records", kerr.InvalidRecord, h.NumRecords)
	}
	if h.LastOffsetDelta != h.NumRecords-1 {
		return info, fmt.Errorf("%w: last offset delta %d does not match %d records", kerr.InvalidRecord, h.LastOffsetDelta, h.NumRecords)
	}
	body := b[BatchHeaderSize:]
	codec := h.Compression()
	if codec != CompressionNone {
		if codec > CompressionZstd {
			return info, fmt.Errorf("%w: compression codec %d", kerr.UnsupportedCompressionType, codec)
		}
		buf, err := decompress(codec, body)
		if err != nil {
			return info, fmt.Errorf("%w: %s batch does not decompress: %v", kerr.CorruptMessage, codecName(codec), err)
		}
		defer releaseBuffer(buf)
		body = buf.b
	}
	stats, err := scanRecords(body, h.NumRecords)
	if err != nil {
		return info, err
	}
	info.MaxRecordTimestamp = h.BaseTimestamp + stats.maxTimestampDelta
	info.OffsetDeltaOfMaxTimestamp = stats.offsetDeltaOfMax
	info.NullKey = stats.nullKey
	if h.IsControl() {
		info.Marker, err = parseMarkerRecord(body)
		return info, err
	}
	if rules != nil && !rules.LogAppendTime {
		if err := checkTimestamp(h.BaseTimestamp+stats.minTimestampDelta, rules, now); err != nil {
			return info, err
		}
		if err := checkTimestamp(info.MaxRecordTimestamp, rules, now); err != nil {
			return info, err
		}
	}
	return info, nil
}

func checkTimestamp(ts int64, rules *ValidationRules, now time.Time) error {
	diff := ts - now.UnixMilli()
	if rules.TimestampBeforeMax >= 0 && -diff > rules.TimestampBeforeMax.Milliseconds() {
		return fmt.Errorf("%w: timestamp %d is more than %s before the broker clock", kerr.InvalidTimestamp, ts, rules.TimestampBeforeMax)
	}
	if rules.TimestampAfterMax >= 0 && diff > rules.TimestampAfterMax.Milliseconds() {
		return fmt.Errorf("%w: timestamp %d is more than %s after the broker clock", kerr.InvalidTimestamp, ts, rules.TimestampAfterMax)
	}
	return nil
}

type recordStats struct {
	minTimestampDelta int64
	maxTimestampDelta int64
	offsetDeltaOfMax  int32
	nullKey           bool
}

// scanRecords walks count records in body without allocating and checks that
// each parses, that offset deltas run 0..count-1 and that nothing trails.
// It is the hot part of every produce, so it works on a local cursor with
// an inlined one-byte varint path instead of the reader type.
func scanRecords(body []byte, count int32) (recordStats, error) {
	st := recordStats{minTimestampDelta: math.MaxInt64, maxTimestampDelta: math.MinInt64}
	p := 0
	for i := int32(0); i < count; i++ {
		length, q := varintAt(body, p)
		if q < 0 || length < 0 || length > int64(len(body)-q) {
			return st, fmt.Errorf("%w: record %d has a bad length", kerr.CorruptMessage, i)
		}
		end := q + int(length)
		rec := body[:end]
		q++ // attributes, unused in v2
		tsDelta, q := varintAt(rec, q)
		offDelta, q := varintAt(rec, q)
		if uint(q) < uint(len(rec)) && rec[q] == 1 { // zigzag -1: a null key
			st.nullKey = true
		}
		q = skipBytesAt(rec, q, true)  // key
		q = skipBytesAt(rec, q, true)  // value
		headers, q := varintAt(rec, q) // header count
		if q >= 0 && (headers < 0 || headers > int64(end-q)) {
			q = -1
		}
		for j := int64(0); j < headers && q >= 0; j++ {
			q = skipBytesAt(rec, q, false)
			q = skipBytesAt(rec, q, true)
		}
		if q != end {
			return st, fmt.Errorf("%w: record %d is malformed", kerr.CorruptMessage, i)
		}
		if offDelta != int64(i) {
			return st, fmt.Errorf("%w: record %d has offset delta %d", kerr.InvalidRecord, i, offDelta)
		}
		if tsDelta < st.minTimestampDelta {
			st.minTimestampDelta = tsDelta
		}
		if tsDelta > st.maxTimestampDelta {
			st.maxTimestampDelta = tsDelta
			st.offsetDeltaOfMax = i
		}
		p = end
	}
	if p != len(body) {
		return st, fmt.Errorf("%w: %d bytes trail the last record", kerr.CorruptMessage, len(body)-p)
	}
	return st, nil
}

// varintAt decodes the zigzag varint at b[p:]; the returned position is -1
// when it does not parse (and stays -1 when passed -1).
//
// One- and two-byte varints (values -8192..8191: every record length,
// key and value size under 8 KiB) are decoded inline; longer ones go to
// binary.Varint.
func varintAt(b []byte, p int) (int64, int) {
	if uint(p) < uint(len(b)) {
		c := b[p]
		if c < 0x80 {
			return int64(c>>1) ^ -int64(c&1), p + 1
		}
		if uint(p+1) < uint(len(b)) {
			if d := b[p+1]; d < 0x80 {
				u := uint64(c&0x7f) | uint64(d)<<7
				return int64(u>>1) ^ -int64(u&1), p + 2
			}
		}
	}
	return varintAtSlow(b, p)
}

func varintAtSlow(b []byte, p int) (int64, int) {
	if p < 0 || p >= len(b) {
		return 0, -1
	}
	v, n := binary.Varint(b[p:])
	if n <= 0 {
		return 0, -1
	}
	return v, p + n
}

// skipBytesAt skips a varint-length-prefixed field (-1 is null, allowed
// when nullable) and returns the position after it, or -1.
func skipBytesAt(b []byte, p int, nullable bool) int {
	n, p := varintAt(b, p)
	switch {
	case p < 0:
		return -1
	case n == -1 && nullable:
		return p
	case n < 0 || n > int64(len(b)-p):
		return -1
	}
	return p + int(n)
}

// reader is a sticky-error cursor over client bytes: once a read runs off
// the end, err stays set and every later read returns zero.
type reader struct {
	b   []byte
	p   int
	err bool
}

func (r *reader) skip(n int) {
	if r.err || n < 0 || n > len(r.b)-r.p {
		r.err = true
		return
	}
	r.p += n
}

func (r *reader) varint() int64 {
	// Fast path, small enough to inline: one-byte values (most lengths,
	// deltas and counts) and no error yet.
	if p := r.p; p < len(r.b) && r.b[p] < 0x80 && !r.err {
		r.p++
		u := int64(r.b[p])
		return (u >> 1) ^ -(u & 1)
	}
	return r.varintSlow()
}

func (r *reader) varintSlow() int64 {
	if r.err {
		return 0
	}
	if b, p := r.b, r.p; p+1 < len(b) && b[p]&0x80 != 0 && b[p+1] < 0x80 {
		r.p += 2
		u := int64(b[p]&0x7f) | int64(b[p+1])<<7
		return (u >> 1) ^ -(u & 1)
	}
	v, n := binary.Varint(r.b[r.p:])
	if n <= 0 {
		r.err = true
		return 0
	}
	r.p += n
	return v
}

// bytesField skips a varint-length-prefixed field; -1 means null and is
// allowed only where nullable.
func (r *reader) bytesField(nullable bool) {
	n := r.varint()
	if n == -1 && nullable {
		return
	}
	if n < 0 {
		r.err = true
		return
	}
	if n > int64(len(r.b)-r.p) {
		r.err = true
		return
	}
	r.p += int(n)
}

// stampBatch writes the broker-assigned fields into a validated batch in
// place: base offset and leader epoch (outside the CRC) and, for
// LogAppendTime topics, the timestamp type and max timestamp (inside it, so
// the CRC is recomputed). A CreateTime batch whose max timestamp disagrees
// with its records is corrected the same way.
func stampBatch(b []byte, info *BatchInfo, baseOffset int64, leaderEpoch int32, logAppendTime bool, now time.Time) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(leaderEpoch))
	info.BaseOffset = baseOffset
	info.LeaderEpoch = leaderEpoch
	attrs := info.Attributes
	maxTs := info.MaxRecordTimestamp
	if logAppendTime {
		attrs |= attrLogAppendTime
		maxTs = now.UnixMilli()
	} else {
		attrs &^= attrLogAppendTime
	}
	if info.IsControl() || (attrs == info.Attributes && maxTs == info.MaxTimestamp) {
		return
	}
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	crc := crc32.Checksum(b[offAttributes:], castagnoli)
	binary.BigEndian.PutUint32(b[offCRC:], crc)
	info.Attributes = attrs
	info.MaxTimestamp = maxTs
	info.CRC = crc
}

func codecName(c int) string {
	switch c {
	case CompressionNone:
		return "uncompressed"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec %d", c)
}
