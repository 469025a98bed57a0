package log

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ControlType is the type a control record's key carries (Kafka's
// ControlRecordType). A partition of a topic holds only transaction
// markers: ABORT and COMMIT.
type ControlType int16

// The control record types of transaction markers.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return fmt.Sprintf("control type %d", int16(t))
}

// Marker is an end-transaction marker: the one record of a control batch
// that the partition leader writes when the transaction coordinator asks
// (WriteTxnMarkers). The batch's producer id and epoch say whose
// transaction it ends.
type Marker struct {
	Type ControlType
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the marker; a marker from an older coordinator is fenced.
	CoordinatorEpoch int32
}

// Aborted reports whether the marker aborts the transaction.
func (m Marker) Aborted() bool { return m.Type == ControlAbort }

// Control record layout: the key is (version int16, type int16), the
// value (version int16, coordinator epoch int32), both version 0 as Kafka
// 4.x writes them. Later versions may append fields, which are ignored.
const (
	controlKeySize   = 4
	markerValueSize  = 6
	markerRecordBody = 1 + 1 + 1 + 1 + controlKeySize + 1 + markerValueSize + 1 // attributes, ts delta, offset delta, key length, key, value length, value, header count
)

// MarkerBatch encodes the control batch holding marker m for a producer's
// transaction, as the partition leader writes it: transactional and
// control attributes, no sequence, one record whose timestamp is ts
// (milliseconds), base offset 0 and no leader epoch (the append stamps
// both).
func MarkerBatch(producerID int64, producerEpoch int16, m Marker, ts int64) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+1+markerRecordBody)
	binary.BigEndian.PutUint64(b[offBaseOffset:], 0)
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], 0xffffffff)
	b[offMagic] = 2
	binary.BigEndian.PutUint16(b[offAttributes:], uint16(attrTransactional|attrControl))
	binary.BigEndian.PutUint32(b[offLastOffsetDelt:], 0)
	binary.BigEndian.PutUint64(b[offBaseTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint64(b[offProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(b[offProducerEpoch:], uint16(producerEpoch))
	binary.BigEndian.PutUint32(b[offBaseSequence:], 0xffffffff)
	binary.BigEndian.PutUint32(b[offRecordCount:], 1)
	b = binary.AppendVarint(b, markerRecordBody)
	b = append(b, 0)                           // attributes
	b = binary.AppendVarint(b, 0)              // timestamp delta
	b = binary.AppendVarint(b, 0)              // offset delta
	b = binary.AppendVarint(b, controlKeySize) // key
	b = binary.BigEndian.AppendUint16(b, 0)    // key version
	b = binary.BigEndian.AppendUint16(b, uint16(m.Type))
	b = binary.AppendVarint(b, markerValueSize) // value
	b = binary.BigEndian.AppendUint16(b, 0)     // value version
	b = binary.BigEndian.AppendUint32(b, uint32(m.CoordinatorEpoch))
	b = binary.AppendVarint(b, 0) // headers
	binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchLengthOverhead))
	fixBatchCRC(b)
	return b
}

func fixBatchCRC(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// ParseMarker decodes the marker of a control batch b (a whole batch, as
// stored). It checks only what it reads: the header, the control
// attribute, and the first record's key and value; it does not check the
// CRC. It never panics on arbitrary bytes.
func ParseMarker(b []byte) (Marker, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return Marker{}, err
	}
	if !h.IsControl() {
		return Marker{}, fmt.Errorf("%w: not a control batch", kerr.InvalidRecord)
	}
	if int(h.Length) > len(b) {
		return Marker{}, fmt.Errorf("%w: control batch of %d bytes, %d present", kerr.CorruptMessage, h.Length, len(b))
	}
	if h.NumRecords < 1 {
		return Marker{}, fmt.Errorf("%w: control batch without records", kerr.InvalidRecord)
	}
	body := b[BatchHeaderSize:h.Length]
	if c := h.Compression(); c != CompressionNone {
		if c > CompressionZstd {
			return Marker{}, fmt.Errorf("%w: compression codec %d", kerr.UnsupportedCompressionType, c)
		}
		out, err := decompress(c, body)
		if err != nil {
			return Marker{}, fmt.Errorf("%w: control batch does not decompress: %v", kerr.CorruptMessage, err)
		}
		defer releaseBuffer(out)
		body = out.b
	}
	return parseMarkerRecord(body)
}

// parseMarkerRecord decodes the first record of a control batch's
// (uncompressed) records.
func parseMarkerRecord(body []byte) (Marker, error) {
	r := reader{b: body}
	length := r.varint()
	if r.err || length < 0 || length > int64(len(body)-r.p) {
		return Marker{}, fmt.Errorf("%w: control record has a bad length", kerr.CorruptMessage)
	}
	rec := reader{b: body[:r.p+int(length)], p: r.p}
	rec.skip(1)  // attributes
	rec.varint() // timestamp delta
	rec.varint() // offset delta
	key := rec.field()
	value := rec.field()
	if rec.err {
		return Marker{}, fmt.Errorf("%w: control record is malformed", kerr.CorruptMessage)
	}
	if len(key) < controlKeySize || int16(binary.BigEndian.Uint16(key)) < 0 {
		return Marker{}, fmt.Errorf("%w: control record key of %d bytes", kerr.CorruptMessage, len(key))
	}
	t := ControlType(binary.BigEndian.Uint16(key[2:]))
	if t != ControlAbort && t != ControlCommit {
		return Marker{}, fmt.Errorf("%w: control record type %d is not a transaction marker", kerr.InvalidRecord, int16(t))
	}
	if len(value) < markerValueSize || int16(binary.BigEndian.Uint16(value)) < 0 {
		return Marker{}, fmt.Errorf("%w: transaction marker value of %d bytes", kerr.CorruptMessage, len(value))
	}
	return Marker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(value[2:]))}, nil
}

// field reads a varint-length-prefixed field and returns its bytes (nil
// for null).
func (r *reader) field() []byte {
	n := r.varint()
	if r.err || n == -1 {
		return nil
	}
	if n < 0 || n > int64(len(r.b)-r.p) {
		r.err = true
		return nil
	}
	v := r.b[r.p : r.p+int(n)]
	r.p += int(n)
	return v
}

// TxnMarker is what WriteTxnMarkers asks a partition leader to write for
// one producer.
type TxnMarker struct {
	ProducerID    int64
	ProducerEpoch int16
	Marker
}

// AppendMarker writes the control batch ending producer m.ProducerID's
// transaction (the leader's side of WriteTxnMarkers): it builds the batch
// with the broker's clock, stamps opts.LeaderEpoch and the next offset,
// and runs opts.Guard (the producer state's marker check: epoch and
// coordinator epoch) under the append lock like any append. With a
// ProducerState the transaction is completed there and an abort is added
// to the active segment's aborted-transaction index.
func (l *Log) AppendMarker(m TxnMarker, opts AppendOptions) (AppendResult, error) {
	if m.ProducerID < 0 {
		return AppendResult{}, fmt.Errorf("%w: marker for producer id %d", kerr.InvalidRecord, m.ProducerID)
	}
	if m.Type != ControlAbort && m.Type != ControlCommit {
		return AppendResult{}, fmt.Errorf("%w: control type %d is not a transaction marker", kerr.InvalidRecord, int16(m.Type))
	}
	cfg := l.cfg.Load()
	now := l.env().now()
	b := MarkerBatch(m.ProducerID, m.ProducerEpoch, m.Marker, now.UnixMilli())
	info, err := ValidateBatch(b, nil, now)
	if err != nil {
		return AppendResult{}, err // impossible: the batch was built here
	}
	return l.append(b, &info, opts, cfg, now, true)
}
