package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record is one decoded record of a batch. Its slices alias the batch (or
// the decompression buffer, valid only during the callback).
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value (a tombstone)
	Headers   []Header
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// EachRecord decodes the records of one batch in order and calls fn for
// each until fn returns false. The batch must be whole; compressed batches
// are decompressed into a buffer that is reused after the call returns.
func EachRecord(b []byte, fn func(*Record) bool) error {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return err
	}
	if int(h.Length) > len(b) {
		return fmt.Errorf("%w: partial batch", kerr.CorruptMessage)
	}
	body := b[BatchHeaderSize:h.Length]
	if c := h.Compression(); c != CompressionNone {
		out, err := decompress(c, body)
		if err != nil {
			return fmt.Errorf("%w: %v", kerr.CorruptMessage, err)
		}
		defer releaseBuffer(out)
		body = out.b
	}
	r := reader{b: body}
	var rec Record
	for i := int32(0); i < h.NumRecords; i++ {
		length := r.varint()
		end := r.p + int(length)
		if r.err || length < 0 || end > len(body) {
			return fmt.Errorf("%w: record %d has a bad length", kerr.CorruptMessage, i)
		}
		rr := reader{b: body[:end], p: r.p}
		rr.skip(1)
		tsDelta := rr.varint()
		offDelta := rr.varint()
		rec.Key = rr.bytes()
		rec.Value = rr.bytes()
		n := rr.varint()
		if n < 0 || n > int64(len(rr.b)-rr.p) {
			rr.err = true
		}
		rec.Headers = rec.Headers[:0]
		for j := int64(0); j < n && !rr.err; j++ {
			k := rr.bytes()
			v := rr.bytes()
			rec.Headers = append(rec.Headers, Header{Key: string(k), Value: v})
		}
		if rr.err {
			return fmt.Errorf("%w: record %d is malformed", kerr.CorruptMessage, i)
		}
		rec.Offset = h.BaseOffset + offDelta
		rec.Timestamp = h.BaseTimestamp + tsDelta
		if h.LogAppendTime() {
			rec.Timestamp = h.MaxTimestamp
		}
		r.p = end
		if !fn(&rec) {
			return nil
		}
	}
	return nil
}

// bytes reads a varint-length-prefixed field; -1 is null.
func (r *reader) bytes() []byte {
	n := r.varint()
	if r.err || n == -1 {
		return nil
	}
	if n < 0 || n > int64(len(r.b)-r.p) {
		r.err = true
		return nil
	}
	v := r.b[r.p : r.p+int(n) : r.p+int(n)]
	r.p += int(n)
	return v
}

// BatchBuilder encodes uncompressed v2 batches, for records the broker
// writes itself (internal topics) and for tests.
type BatchBuilder struct {
	buf     []byte
	n       int32
	baseTs  int64
	maxTs   int64
	control bool
}

// Reset starts a new batch whose base timestamp is ts.
func (bb *BatchBuilder) Reset(ts int64) {
	bb.buf = append(bb.buf[:0], make([]byte, BatchHeaderSize)...)
	bb.n = 0
	bb.baseTs, bb.maxTs = ts, ts
}

// Add appends a record with the given timestamp.
func (bb *BatchBuilder) Add(ts int64, key, value []byte, headers []Header) {
	if len(bb.buf) < BatchHeaderSize {
		bb.Reset(ts)
	}
	var rec []byte
	rec = append(rec, 0)
	rec = binary.AppendVarint(rec, ts-bb.baseTs)
	rec = binary.AppendVarint(rec, int64(bb.n))
	rec = appendNullable(rec, key)
	rec = appendNullable(rec, value)
	rec = binary.AppendVarint(rec, int64(len(headers)))
	for _, h := range headers {
		rec = appendNullable(rec, []byte(h.Key))
		rec = appendNullable(rec, h.Value)
	}
	bb.buf = binary.AppendVarint(bb.buf, int64(len(rec)))
	bb.buf = append(bb.buf, rec...)
	bb.n++
	bb.maxTs = max(bb.maxTs, ts)
}

// Len is the number of records added.
func (bb *BatchBuilder) Len() int { return int(bb.n) }

// Build finishes the batch (producer id -1, no sequence) and returns it;
// the slice is valid until the next Reset.
func (bb *BatchBuilder) Build() []byte { return bb.build(0, -1, -1) }

// BuildTransactional finishes the batch as a transactional batch of a
// producer, with no sequence (base sequence -1), as a coordinator writes
// on a producer's behalf (Kafka's transactional offset commits).
func (bb *BatchBuilder) BuildTransactional(producerID int64, producerEpoch int16) []byte {
	return bb.build(attrTransactional, producerID, producerEpoch)
}

func (bb *BatchBuilder) build(attrs uint16, producerID int64, producerEpoch int16) []byte {
	b := bb.buf
	binary.BigEndian.PutUint64(b[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthOverhead))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint32(b[offLastOffsetDelt:], uint32(bb.n-1))
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(bb.baseTs))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(bb.maxTs))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(producerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(bb.n))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// StampProducer rewrites a built v2 batch as producer producerID sends it
// at epoch from baseSequence (transactional sets the transactional bit)
// and recomputes its CRC: the idempotent and transactional batches of
// tests and tools.
func StampProducer(b []byte, producerID int64, epoch int16, baseSequence int32, transactional bool) {
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], uint32(baseSequence))
	if transactional {
		binary.BigEndian.PutUint16(b[offAttributes:], binary.BigEndian.Uint16(b[offAttributes:])|attrTransactional)
	}
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

func appendNullable(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}
