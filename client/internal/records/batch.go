package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of a v2 record batch header: the overhead a new
// batch adds to the partitioner's byte count.
const HeaderSize = 61

// maxRecordOverhead bounds a record's framing: length, attributes,
// timestamp and offset deltas, key and value lengths, header count.
const maxRecordOverhead = 5 + 1 + 10 + 5 + 5 + 5 + 5

// compressionEstimateFactor pads the compressed size estimate, as the Java
// client's COMPRESSION_RATE_ESTIMATION_FACTOR does.
const compressionEstimateFactor = 1.05

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Attribute bits of a batch.
const (
	attrCodecMask     = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// Builder accumulates the records of one batch. See the package docs.
type Builder struct {
	buf     []byte // HeaderSize bytes for the header, then the records, uncompressed
	n       int32
	baseTs  int64
	maxTs   int64
	limit   int
	ratio   float64
	codec   Codec
	closed  bool
	scratch []byte
}

// NewBuilder starts a batch whose estimated size may grow to limit bytes
// (the buffer the producer reserved: max(batch.size, first record's upper
// bound)). ratio is the current compression ratio estimate for the topic and
// codec (1 for none).
func NewBuilder(codec Codec, limit int, ratio float64) *Builder {
	return NewBuilderIn(nil, codec, limit, ratio)
}

// NewBuilderIn is NewBuilder writing into buf's storage (its contents are
// overwritten), for a producer that recycles batch buffers; with too small
// a buf a new one is allocated.
func NewBuilderIn(buf []byte, codec Codec, limit int, ratio float64) *Builder {
	if codec == None || ratio <= 0 {
		ratio = 1
	}
	if cap(buf) < HeaderSize {
		buf = make([]byte, 0, max(HeaderSize, min(limit, 1<<16)))
	}
	return &Builder{codec: codec, limit: limit, ratio: ratio, buf: buf[:HeaderSize]}
}

// records is the record bytes written so far, uncompressed (none once
// recycled).
func (b *Builder) records() []byte {
	if len(b.buf) < HeaderSize {
		return nil
	}
	return b.buf[HeaderSize:]
}

// RecordSize is the encoded size of a record at offset delta and timestamp
// delta, length prefix included.
func RecordSize(offsetDelta int32, tsDelta int64, key, value []byte, headers []Header) int {
	body := recordBody(offsetDelta, tsDelta, key, value, headers)
	return varintLen(int64(body)) + body
}

func recordBody(offsetDelta int32, tsDelta int64, key, value []byte, headers []Header) int {
	body := 1 + varlongLen(tsDelta) + varintLen(int64(offsetDelta)) + bytesLen(key) + bytesLen(value) + varintLen(int64(len(headers)))
	for _, h := range headers {
		body += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return body
}

// UpperBound is the largest size a batch holding only this record can have,
// used to size the buffer of a batch opened for it.
func UpperBound(key, value []byte, headers []Header) int {
	n := HeaderSize + maxRecordOverhead + len(key) + len(value)
	for _, h := range headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// Estimated is the batch's estimated size in bytes: the header plus the
// record bytes, scaled by the compression estimate when compressed.
func (b *Builder) Estimated() int {
	if b.codec == None {
		return len(b.buf)
	}
	return HeaderSize + int(float64(len(b.records()))*b.ratio*compressionEstimateFactor)
}

// Len is the number of records.
func (b *Builder) Len() int { return int(b.n) }

// UncompressedBytes is the size of the records before compression.
func (b *Builder) UncompressedBytes() int { return len(b.records()) }

// IsFull reports whether no more records go in: closed, or its estimate has
// reached the limit. An empty batch is never full.
func (b *Builder) IsFull() bool {
	return b.closed || (b.n > 0 && b.Estimated() >= b.limit)
}

// Close stops appends.
func (b *Builder) Close() { b.closed = true }

// TryAppend adds a record if it fits and returns how much the size estimate
// grew. The first record always fits; later ones fit while the estimate plus
// the record stays within the limit.
func (b *Builder) TryAppend(ts int64, key, value []byte, headers []Header) (int, bool) {
	if b.closed {
		return 0, false
	}
	if b.n == 0 {
		b.baseTs, b.maxTs = ts, ts
	}
	size := RecordSize(b.n, ts-b.baseTs, key, value, headers)
	if b.n > 0 && b.Estimated()+size > b.limit {
		return 0, false
	}
	before := b.Estimated()
	if b.n == 0 {
		before = 0 // a new batch counts its header too
	}
	b.buf = appendRecord(b.buf, b.n, ts-b.baseTs, key, value, headers)
	b.n++
	b.maxTs = max(b.maxTs, ts)
	return b.Estimated() - before, true
}

func appendRecord(dst []byte, offsetDelta int32, tsDelta int64, key, value []byte, headers []Header) []byte {
	body := recordBody(offsetDelta, tsDelta, key, value, headers)
	dst = binary.AppendVarint(dst, int64(body))
	dst = append(dst, 0) // attributes
	dst = binary.AppendVarint(dst, tsDelta)
	dst = binary.AppendVarint(dst, int64(offsetDelta))
	dst = appendBytes(dst, key)
	dst = appendBytes(dst, value)
	dst = binary.AppendVarint(dst, int64(len(headers)))
	for _, h := range headers {
		dst = binary.AppendVarint(dst, int64(len(h.Key)))
		dst = append(dst, h.Key...)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

func bytesLen(b []byte) int {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b))) + len(b)
}

func varintLen(v int64) int { return varlongLen(v) }

// varlongLen is the size of v as a zigzag varint.
func varlongLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for ; u >= 0x80; u >>= 7 {
		n++
	}
	return n
}

// Producer identifies the writer of a batch for idempotence: id -1 means none.
type Producer struct {
	ID            int64
	Epoch         int16
	BaseSequence  int32
	Transactional bool
}

// NoProducer is the identity of a non-idempotent batch.
var NoProducer = Producer{ID: -1, Epoch: -1, BaseSequence: -1}

// Build returns the batch's wire bytes (compressed, with CRC), appended to
// dst, and the compression ratio observed (compressed/uncompressed records).
// It can be called again with another Producer (a retry after an epoch bump
// re-encodes the header only in Java; here the whole batch is rebuilt).
func (b *Builder) Build(dst []byte, p Producer, o Options) ([]byte, float64, error) {
	start := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	var err error
	recs := b.records()
	if b.codec == None {
		dst = append(dst, recs...)
	} else if dst, err = Compress(dst, recs, b.codec, o); err != nil {
		return nil, 0, err
	}
	ratio := 1.0
	if len(recs) > 0 {
		ratio = float64(len(dst)-start-HeaderSize) / float64(len(recs))
	}
	b.putHeader(dst[start:], p)
	return dst, ratio, nil
}

// Wire is Build without a copy when the batch is not compressed: the
// header is written in front of the records in the Builder's own buffer
// and that buffer is returned, so it stays valid only until the buffer is
// recycled or Wire is called again. Compressed batches are built into a
// new buffer as by Build(nil, ...).
func (b *Builder) Wire(p Producer, o Options) ([]byte, float64, error) {
	if b.codec != None {
		return b.Build(nil, p, o)
	}
	b.putHeader(b.buf, p)
	return b.buf, 1, nil
}

// Recycle returns the Builder's buffer for NewBuilderIn and leaves the
// Builder unusable. Wire's result is overwritten by the next user.
func (b *Builder) Recycle() []byte {
	buf := b.buf[:0]
	b.buf, b.closed = nil, true
	return buf
}

// putHeader fills the batch header at the start of h, whose records follow
// it, CRC last.
func (b *Builder) putHeader(h []byte, p Producer) {
	be := binary.BigEndian
	be.PutUint64(h[0:], 0)                 // base offset, assigned by the broker
	be.PutUint32(h[8:], uint32(len(h)-12)) // length after this field
	be.PutUint32(h[12:], 0xffffffff)       // partition leader epoch: -1
	h[16] = 2                              // magic
	attrs := int16(b.codec)
	if p.Transactional {
		attrs |= attrTransactional
	}
	be.PutUint16(h[21:], uint16(attrs))
	be.PutUint32(h[23:], uint32(max(b.n-1, 0))) // last offset delta
	be.PutUint64(h[27:], uint64(b.baseTs))
	be.PutUint64(h[35:], uint64(b.maxTs))
	be.PutUint64(h[43:], uint64(p.ID))
	be.PutUint16(h[51:], uint16(p.Epoch))
	be.PutUint32(h[53:], uint32(p.BaseSequence))
	be.PutUint32(h[57:], uint32(b.n))
	be.PutUint32(h[17:], crc32.Checksum(h[21:], crc32c))
}

// UpdateRatio moves a compression ratio estimate toward an observed ratio
// the way the Java client does: quickly up when compression did worse than
// estimated (so batches do not overflow), slowly down when it did better.
func UpdateRatio(est, observed float64) float64 {
	switch {
	case observed > est:
		return max(est+0.05, observed)
	case observed < est:
		return max(est-0.005, observed)
	}
	return est
}

// Record is one decoded record.
type Record struct {
	Offset      int64
	Timestamp   int64
	Key, Value  []byte
	Headers     []Header
	LeaderEpoch int32
}

// Batch is one decoded batch. Records of a control batch are not decoded.
type Batch struct {
	BaseOffset     int64
	LastOffset     int64
	LeaderEpoch    int32
	Codec          Codec
	LogAppendTime  bool
	Transactional  bool
	Control        bool
	ProducerID     int64
	ProducerEpoch  int16
	BaseSequence   int32
	MaxTimestamp   int64
	Records        []Record
	CompressedSize int
}

// Decode errors.
var (
	ErrCRC        = errors.New("records: batch CRC mismatch")
	ErrMalformed  = errors.New("records: malformed batch")
	ErrOldFormat  = errors.New("records: message format v0/v1 is not supported")
	errIncomplete = errors.New("incomplete")
)

// Decode parses the record set of one fetched partition, calling fn per
// batch. A batch cut short at the end of set (the broker truncates to the
// size limit) ends decoding without error. maxBytes caps each batch's
// decompressed records.
func Decode(set []byte, maxBytes int, fn func(*Batch)) error {
	return decodeSet(set, maxBytes, func(raw []byte) error {
		b, err := decodeBatch(raw, maxBytes, nil)
		if err == nil {
			fn(b)
		}
		return err
	})
}

// DecodeEach is Decode for a caller that keeps records in its own form:
// each gets every record of every batch but control batches, in order,
// with the batch (its Records nil), and done gets each batch once all of
// its records went to each. A record's Key, Value and Headers' bytes
// alias set (or the batch's decompressed records). A caller that copies
// the records anyway saves Decode's []Record of every batch. On an error,
// the records each got since the last done are of the malformed batch:
// the caller drops them, as Decode never hands out a malformed batch.
func DecodeEach(set []byte, maxBytes int, each func(*Batch, Record), done func(*Batch)) error {
	return decodeSet(set, maxBytes, func(raw []byte) error {
		b, err := decodeBatch(raw, maxBytes, each)
		if err == nil {
			done(b)
		}
		return err
	})
}

// decodeSet splits set into whole batches for fn.
func decodeSet(set []byte, maxBytes int, fn func(raw []byte) error) error {
	for len(set) > 0 {
		if len(set) < 17 {
			return nil
		}
		length := int32(binary.BigEndian.Uint32(set[8:]))
		if length < 0 {
			return fmt.Errorf("%w: negative length", ErrMalformed)
		}
		total := 12 + int(length)
		if total > len(set) {
			return nil // truncated tail
		}
		if set[16] != 2 {
			return fmt.Errorf("%w: magic %d", ErrOldFormat, set[16])
		}
		if err := fn(set[:total]); err != nil {
			return err
		}
		set = set[total:]
	}
	return nil
}

// decodeBatch decodes one batch; with each, its records go to each one
// by one instead of into Records.
func decodeBatch(raw []byte, maxBytes int, each func(*Batch, Record)) (*Batch, error) {
	if len(raw) < HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than a header", ErrMalformed, len(raw))
	}
	be := binary.BigEndian
	if crc32.Checksum(raw[21:], crc32c) != be.Uint32(raw[17:]) {
		return nil, ErrCRC
	}
	attrs := be.Uint16(raw[21:])
	b := &Batch{
		BaseOffset:     int64(be.Uint64(raw)),
		LeaderEpoch:    int32(be.Uint32(raw[12:])),
		Codec:          Codec(attrs & attrCodecMask),
		LogAppendTime:  attrs&attrLogAppendTime != 0,
		Transactional:  attrs&attrTransactional != 0,
		Control:        attrs&attrControl != 0,
		ProducerID:     int64(be.Uint64(raw[43:])),
		ProducerEpoch:  int16(be.Uint16(raw[51:])),
		BaseSequence:   int32(be.Uint32(raw[53:])),
		MaxTimestamp:   int64(be.Uint64(raw[35:])),
		CompressedSize: len(raw),
	}
	b.LastOffset = b.BaseOffset + int64(int32(be.Uint32(raw[23:])))
	if b.Control {
		return b, nil
	}
	baseTs := int64(be.Uint64(raw[27:]))
	count := int32(be.Uint32(raw[57:]))
	if count < 0 {
		return nil, fmt.Errorf("%w: negative record count", ErrMalformed)
	}
	body, err := Decompress(raw[HeaderSize:], b.Codec, maxBytes)
	if err != nil {
		return nil, err
	}
	// Every record takes at least 7 bytes; a count beyond that is a lie.
	if int(count) > len(body)/7+1 {
		return nil, fmt.Errorf("%w: %d records in %d bytes", ErrMalformed, count, len(body))
	}
	if each == nil {
		b.Records = make([]Record, 0, count)
	}
	r := reader{b: body}
	for i := int32(0); i < count; i++ {
		rec, err := r.record()
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %v", ErrMalformed, i, err)
		}
		rec.Offset += b.BaseOffset
		if b.LogAppendTime {
			rec.Timestamp = b.MaxTimestamp
		} else {
			rec.Timestamp += baseTs
		}
		rec.LeaderEpoch = b.LeaderEpoch
		if each != nil {
			each(b, rec) // a copy: a pointer would move rec to the heap
			continue
		}
		b.Records = append(b.Records, rec)
	}
	return b, nil
}

// reader decodes records; it never panics on short or hostile input.
type reader struct {
	b   []byte
	err error
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errIncomplete
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(allowNull bool) []byte {
	n := r.varint()
	if r.err != nil {
		return nil
	}
	if n < 0 {
		if !allowNull {
			r.err = errors.New("null where a string is required")
		}
		return nil
	}
	if n > int64(len(r.b)) {
		r.err = errIncomplete
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) record() (Record, error) {
	length := r.varint()
	if r.err != nil {
		return Record{}, r.err
	}
	if length < 0 || length > int64(len(r.b)) {
		return Record{}, errIncomplete
	}
	sub := reader{b: r.b[:length]}
	r.b = r.b[length:]
	if len(sub.b) < 1 {
		return Record{}, errIncomplete
	}
	sub.b = sub.b[1:] // attributes, unused
	var rec Record
	rec.Timestamp = sub.varint()
	rec.Offset = sub.varint()
	rec.Key = sub.bytes(true)
	rec.Value = sub.bytes(true)
	nh := sub.varint()
	if sub.err == nil && (nh < 0 || nh > int64(len(sub.b))/2) {
		sub.err = errors.New("bad header count")
	}
	for i := int64(0); i < nh && sub.err == nil; i++ {
		k := sub.bytes(false)
		v := sub.bytes(true)
		rec.Headers = append(rec.Headers, Header{Key: string(k), Value: v})
	}
	return rec, sub.err
}
