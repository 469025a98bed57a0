package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The records of __transaction_state, byte for byte as Kafka writes them:
// the key is TransactionLogKey (version 0: the transactional id), the
// value TransactionLogValue (version 0, or the flexible version 1 that a
// cluster at transaction.version 1 or more writes). A null value is a
// tombstone: the transactional id expired. Both are prefixed with their
// version as a big-endian int16.

var (
	// ErrUnknownKeyVersion is a key whose version is not 0. Kafka skips
	// such records when it loads the log (they are left by aborted
	// upgrades), and so does Partition.Replay.
	ErrUnknownKeyVersion = errors.New("txn: unknown __transaction_state key version")
	// ErrUnknownValueVersion is a value whose version is not 0 or 1.
	ErrUnknownValueVersion = errors.New("txn: unknown __transaction_state value version")
	// ErrCorrupt is a record that does not decode.
	ErrCorrupt = errors.New("txn: corrupt __transaction_state record")
)

// TopicPartitions is one topic's partitions in a state record
// (PartitionsSchema).
type TopicPartitions struct {
	Topic      string
	Partitions []int32
}

// Value is a TransactionLogValue: one transactional id's state after a
// transition.
type Value struct {
	// Version is the encoding: 0, or 1 (flexible, with tagged fields).
	Version int16

	ProducerID int64
	// PrevProducerID (tag 0, v1) is the producer id before the last
	// transition that changed it; -1 when none.
	PrevProducerID int64
	// NextProducerID (tag 1, v1) is the producer id a transaction
	// version 2 producer moves to when its epoch runs out; -1 when none.
	NextProducerID int64
	ProducerEpoch  int16
	// NextProducerEpoch (tag 3, v1) belongs to two-phase commit
	// (KIP-939), which this coordinator does not serve; it is kept so
	// that a record written by a Kafka broker decodes whole. -1 when
	// none.
	NextProducerEpoch int16
	TimeoutMs         int32
	Status            State
	// Partitions is null (nil) in an Empty state, a list (possibly empty)
	// otherwise.
	Partitions   []TopicPartitions
	LastUpdateMs int64
	StartMs      int64
	// ClientVersion (tag 2, v1) is the transaction version the client
	// used for the transition.
	ClientVersion int16
}

// EncodeKey returns the key of a transactional id's records.
func EncodeKey(transactionalID string) []byte {
	b := make([]byte, 0, 4+len(transactionalID))
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(transactionalID)))
	return append(b, transactionalID...)
}

// DecodeKey returns the transactional id a key names.
func DecodeKey(b []byte) (string, error) {
	r := reader{b: b}
	if v := r.int16(); r.err == nil && v != 0 {
		return "", fmt.Errorf("%w: %d", ErrUnknownKeyVersion, v)
	}
	id := r.string()
	if r.err != nil {
		return "", fmt.Errorf("%w: key: %v", ErrCorrupt, r.err)
	}
	return id, nil
}

// EncodeValue returns v in its encoding v.Version (0 or 1; anything else
// is encoded as 1). Tagged fields at their defaults are left out, as
// Kafka's generated writers do.
func EncodeValue(v *Value) []byte {
	flexible := v.Version >= 1
	version := int16(0)
	if flexible {
		version = 1
	}
	b := make([]byte, 0, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint64(b, uint64(v.ProducerID))
	b = binary.BigEndian.AppendUint16(b, uint16(v.ProducerEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.TimeoutMs))
	b = append(b, byte(v.Status))
	if flexible {
		if v.Partitions == nil {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(v.Partitions))+1)
		}
	} else {
		n := int32(-1)
		if v.Partitions != nil {
			n = int32(len(v.Partitions))
		}
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	for _, tp := range v.Partitions {
		if flexible {
			b = binary.AppendUvarint(b, uint64(len(tp.Topic))+1)
			b = append(b, tp.Topic...)
			b = binary.AppendUvarint(b, uint64(len(tp.Partitions))+1)
		} else {
			b = binary.BigEndian.AppendUint16(b, uint16(len(tp.Topic)))
			b = append(b, tp.Topic...)
			b = binary.BigEndian.AppendUint32(b, uint32(len(tp.Partitions)))
		}
		for _, p := range tp.Partitions {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
		if flexible {
			b = append(b, 0) // no tagged fields
		}
	}
	b = binary.BigEndian.AppendUint64(b, uint64(v.LastUpdateMs))
	b = binary.BigEndian.AppendUint64(b, uint64(v.StartMs))
	if !flexible {
		return b
	}
	type tag struct {
		id   uint64
		data []byte
	}
	var tags []tag
	if v.PrevProducerID != -1 {
		tags = append(tags, tag{0, binary.BigEndian.AppendUint64(nil, uint64(v.PrevProducerID))})
	}
	if v.NextProducerID != -1 {
		tags = append(tags, tag{1, binary.BigEndian.AppendUint64(nil, uint64(v.NextProducerID))})
	}
	if v.ClientVersion != 0 {
		tags = append(tags, tag{2, binary.BigEndian.AppendUint16(nil, uint16(v.ClientVersion))})
	}
	if v.NextProducerEpoch != -1 {
		tags = append(tags, tag{3, binary.BigEndian.AppendUint16(nil, uint16(v.NextProducerEpoch))})
	}
	b = binary.AppendUvarint(b, uint64(len(tags)))
	for _, t := range tags {
		b = binary.AppendUvarint(b, t.id)
		b = binary.AppendUvarint(b, uint64(len(t.data)))
		b = append(b, t.data...)
	}
	return b
}

// DecodeValue decodes a TransactionLogValue. Unknown tagged fields are
// skipped; trailing bytes are ignored, as Kafka's readers do.
func DecodeValue(b []byte) (Value, error) {
	r := reader{b: b}
	v := Value{PrevProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1}
	v.Version = r.int16()
	if r.err == nil && v.Version != 0 && v.Version != 1 {
		return Value{}, fmt.Errorf("%w: %d", ErrUnknownValueVersion, v.Version)
	}
	flexible := v.Version == 1
	v.ProducerID = r.int64()
	v.ProducerEpoch = r.int16()
	v.TimeoutMs = r.int32()
	v.Status = State(r.int8())
	if r.err == nil && !v.Status.Valid() {
		return Value{}, fmt.Errorf("%w: transaction status %d", ErrCorrupt, int8(v.Status))
	}
	// Each topic takes at least 6 bytes (an empty name and no
	// partitions, non-flexible) or 3 (flexible).
	n, null := r.arrayLen(flexible, 3)
	if !null {
		v.Partitions = make([]TopicPartitions, 0, n)
	}
	for range n {
		var tp TopicPartitions
		if flexible {
			tp.Topic = r.compactString()
		} else {
			tp.Topic = r.string()
		}
		m, pnull := r.arrayLen(flexible, 4)
		if pnull {
			r.fail("null partition ids")
		}
		tp.Partitions = make([]int32, 0, m)
		for range m {
			tp.Partitions = append(tp.Partitions, r.int32())
		}
		if flexible {
			r.skipTags()
		}
		if r.err != nil {
			break
		}
		v.Partitions = append(v.Partitions, tp)
	}
	v.LastUpdateMs = r.int64()
	v.StartMs = r.int64()
	if flexible {
		r.tags(func(id uint64, data []byte) {
			switch id {
			case 0:
				v.PrevProducerID = r.fixed64(data)
			case 1:
				v.NextProducerID = r.fixed64(data)
			case 2:
				v.ClientVersion = r.fixed16(data)
			case 3:
				v.NextProducerEpoch = r.fixed16(data)
			}
		})
	}
	if r.err != nil {
		return Value{}, fmt.Errorf("%w: value: %v", ErrCorrupt, r.err)
	}
	return v, nil
}

// reader reads big-endian Kafka primitives. Its first error sticks: every
// later read returns zero, so a decoder checks once at the end and never
// reads past the input or allocates more than the input could hold.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("need %d bytes, have %d", n, len(r.b))
		return nil
	}
	s := r.b[:n]
	r.b = r.b[n:]
	return s
}

func (r *reader) int8() int8 {
	s := r.take(1)
	if s == nil {
		return 0
	}
	return int8(s[0])
}

func (r *reader) int16() int16 {
	s := r.take(2)
	if s == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(s))
}

func (r *reader) int32() int32 {
	s := r.take(4)
	if s == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(s))
}

func (r *reader) int64() int64 {
	s := r.take(8)
	if s == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(s))
}

// uvarint reads an unsigned varint of at most 5 bytes (an int32's range),
// the only size Kafka's compact lengths and tags use.
func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < 5; i++ {
		if len(r.b) == 0 {
			r.fail("truncated varint")
			return 0
		}
		c := r.b[0]
		r.b = r.b[1:]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if v > math.MaxInt32 {
				r.fail("varint %d out of range", v)
				return 0
			}
			return v
		}
	}
	r.fail("varint longer than 5 bytes")
	return 0
}

// string reads a non-nullable string with an int16 length.
func (r *reader) string() string {
	n := r.int16()
	if r.err == nil && n < 0 {
		r.fail("null string")
	}
	return string(r.take(int(n)))
}

// compactString reads a non-nullable compact string.
func (r *reader) compactString() string {
	n := r.uvarint()
	if r.err == nil && n == 0 {
		r.fail("null compact string")
	}
	if r.err != nil {
		return ""
	}
	return string(r.take(int(n - 1)))
}

// arrayLen reads an array length (int32, or compact uvarint+1 when
// flexible). null reports a null array. A count the remaining input
// cannot hold at minSize bytes per element is an error.
func (r *reader) arrayLen(flexible bool, minSize int) (n int, null bool) {
	if flexible {
		u := r.uvarint()
		if r.err != nil {
			return 0, false
		}
		if u == 0 {
			return 0, true
		}
		n = int(u - 1)
	} else {
		c := r.int32()
		if r.err != nil {
			return 0, false
		}
		if c == -1 {
			return 0, true
		}
		if c < 0 {
			r.fail("array length %d", c)
			return 0, false
		}
		n = int(c)
	}
	if n > len(r.b)/minSize {
		r.fail("array of %d elements in %d bytes", n, len(r.b))
		return 0, false
	}
	return n, false
}

// tags reads a tagged-field section, calling fn with each field's id and
// bytes.
func (r *reader) tags(fn func(id uint64, data []byte)) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		id := r.uvarint()
		size := r.uvarint()
		data := r.take(int(size))
		if r.err == nil {
			fn(id, data)
		}
	}
}

func (r *reader) skipTags() { r.tags(func(uint64, []byte) {}) }

func (r *reader) fixed64(data []byte) int64 {
	if len(data) != 8 {
		r.fail("tagged int64 of %d bytes", len(data))
		return 0
	}
	return int64(binary.BigEndian.Uint64(data))
}

func (r *reader) fixed16(data []byte) int16 {
	if len(data) != 2 {
		r.fail("tagged int16 of %d bytes", len(data))
		return 0
	}
	return int16(binary.BigEndian.Uint16(data))
}
