package metadata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Errors of the decoders. Every decoding failure wraps one of them.
var (
	// ErrCorrupt: the bytes are not a valid encoding (bad magic, checksum,
	// lengths, values out of range, trailing bytes).
	ErrCorrupt = errors.New("metadata: corrupt encoding")
	// ErrUnsupportedVersion: a record or frame of a version newer than
	// this code knows. Applying it could silently drop fields, so it is
	// refused rather than skipped.
	ErrUnsupportedVersion = errors.New("metadata: unsupported version")
)

// The encoding.
//
// A batch is what one metadata log entry carries; its records are applied
// together or not at all:
//
//	magic "WM" | frame version u8 | flags u8 (0) | uvarint record count |
//	records | crc32c (big endian) of every preceding byte
//
// A record is
//
//	kind u8 | version u8 | uvarint body length | body
//
// Bodies use zigzag varints for integers, uvarint-prefixed strings and
// lists, raw 16-byte ids, and one flags byte where a record has optional
// fields or booleans. A decoder reads exactly the body length: a record
// whose fields end early or late is corrupt. Versions: every record kind
// is at version 0; a field added later bumps its kind's version.
const (
	batchMagic0  = 'W'
	batchMagic1  = 'M'
	batchVersion = 0
	// batchOverhead is the frame around the records: magic, version,
	// flags, a one-byte count and the checksum.
	batchOverhead = 2 + 1 + 1 + 1 + 4
)

// recordVersions is the current version of each kind.
var recordVersions = [...]uint8{
	KindRegisterBroker: 0, KindUnregisterBroker: 0, KindFenceBroker: 0, KindUnfenceBroker: 0,
	KindControlledShutdown: 0, KindTopic: 0, KindPartition: 0, KindPartitionChange: 0,
	KindRemoveTopic: 0, KindConfig: 0, KindProducerIDs: 0,
	KindACL: 0, KindRemoveACL: 0, KindScramCredential: 0, KindRemoveScram: 0, KindClientQuota: 0,
	KindFeatureLevel: 0,
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeBatch encodes records as one batch.
func EncodeBatch(recs []Record) []byte { return AppendBatch(make([]byte, 0, 16+32*len(recs)), recs) }

// AppendBatch appends the batch encoding of recs to dst.
func AppendBatch(dst []byte, recs []Record) []byte {
	start := len(dst)
	w := writer{b: dst}
	w.b = append(w.b, batchMagic0, batchMagic1, batchVersion, 0)
	w.uvarint(uint64(len(recs)))
	for _, r := range recs {
		w = appendRecord(w, r)
	}
	return binary.BigEndian.AppendUint32(w.b, crc32.Checksum(w.b[start:], castagnoli))
}

// appendRecord appends one record: header, then the body, whose length
// is only known after writing it. The body is written after a one-byte
// length placeholder and moved when its length needs more bytes.
func appendRecord(w writer, r Record) writer {
	w.b = append(w.b, byte(r.Kind()), recordVersions[r.Kind()], 0)
	lenAt := len(w.b) - 1
	r.encode(&w)
	n := len(w.b) - lenAt - 1
	if n < 0x80 {
		w.b[lenAt] = byte(n)
		return w
	}
	var hdr [binary.MaxVarintLen64]byte
	h := binary.PutUvarint(hdr[:], uint64(n))
	w.b = append(w.b, hdr[:h-1]...)
	copy(w.b[lenAt+h:], w.b[lenAt+1:lenAt+1+n])
	copy(w.b[lenAt:], hdr[:h])
	return w
}

// DecodeBatch decodes a batch. It never panics and never allocates more
// than a small multiple of len(b), whatever the bytes.
func DecodeBatch(b []byte) ([]Record, error) {
	if len(b) < batchOverhead {
		return nil, fmt.Errorf("%w: batch of %d bytes is shorter than its frame", ErrCorrupt, len(b))
	}
	if b[0] != batchMagic0 || b[1] != batchMagic1 {
		return nil, fmt.Errorf("%w: bad batch magic %#x%02x", ErrCorrupt, b[0], b[1])
	}
	if b[2] != batchVersion {
		return nil, fmt.Errorf("%w: batch frame version %d", ErrUnsupportedVersion, b[2])
	}
	if b[3] != 0 {
		return nil, fmt.Errorf("%w: batch flags %#x", ErrCorrupt, b[3])
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return nil, fmt.Errorf("%w: batch checksum %08x, computed %08x", ErrCorrupt, sum, got)
	}
	return decodeRecords(body[4:])
}

// decodeRecords decodes a record count and that many records, which must
// use every byte.
func decodeRecords(b []byte) ([]Record, error) {
	r := reader{b: b}
	n := r.count(3) // the smallest record is three bytes
	if r.err != nil {
		return nil, r.err
	}
	recs := make([]Record, 0, n)
	for range n {
		rec, err := r.record()
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last record", ErrCorrupt, len(r.b))
	}
	return recs, nil
}

// record decodes one record.
func (r *reader) record() (Record, error) {
	kind := Kind(r.u8())
	version := r.u8()
	n := r.uvarint()
	if r.err != nil {
		return nil, r.err
	}
	if n > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: %s body of %d bytes, %d left", ErrCorrupt, kind, n, len(r.b))
	}
	rec := newRecord(kind)
	if rec == nil {
		return nil, fmt.Errorf("%w: unknown record kind %d", ErrCorrupt, uint8(kind))
	}
	if version > recordVersions[kind] {
		return nil, fmt.Errorf("%w: %s version %d", ErrUnsupportedVersion, kind, version)
	}
	body := reader{b: r.b[:n]}
	r.b = r.b[n:]
	rec.decode(&body, version)
	if body.err == nil && len(body.b) != 0 {
		body.failf("%d bytes left in %s body", len(body.b), kind)
	}
	if body.err != nil {
		return nil, body.err
	}
	return rec, nil
}

// writer appends the primitive encodings.
type writer struct{ b []byte }

func (w *writer) u8(v uint8)       { w.b = append(w.b, v) }
func (w *writer) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *writer) varint(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *writer) i32(v int32)      { w.varint(int64(v)) }
func (w *writer) id(v [16]byte)    { w.b = append(w.b, v[:]...) }
func (w *writer) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) i32s(ids []int32) { w.uvarint(uint64(len(ids))); w.rawI32s(ids) }
func (w *writer) bytes(v []byte)   { w.uvarint(uint64(len(v))); w.b = append(w.b, v...) }
func (w *writer) f64(v float64)    { w.b = binary.BigEndian.AppendUint64(w.b, math.Float64bits(v)) }
func (w *writer) rawI32s(v []int32) {
	for _, id := range v {
		w.i32(id)
	}
}

// reader decodes primitives from b. The first failure sticks: later reads
// return zero values, so a decoder checks err once at the end.
type reader struct {
	b   []byte
	err error
}

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	r.b = nil
}

func (r *reader) u8() uint8 {
	if len(r.b) < 1 {
		r.failf("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bool() bool {
	switch r.u8() {
	case 0:
		return false
	case 1:
		return true
	}
	r.failf("boolean is neither 0 nor 1")
	return false
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.failf("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.failf("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) i32() int32 {
	v := r.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.failf("%d overflows int32", v)
		return 0
	}
	return int32(v)
}

func (r *reader) id() (v [16]byte) {
	if len(r.b) < 16 {
		r.failf("truncated id")
		return v
	}
	copy(v[:], r.b)
	r.b = r.b[16:]
	return v
}

// count reads a list length and checks it against the bytes left, each
// element taking at least minSize bytes, so that hostile lengths cannot
// make the decoder allocate.
func (r *reader) count(minSize int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/minSize) {
		r.failf("count %d exceeds the %d bytes left", n, len(r.b))
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.count(1)
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// bytes reads a byte string; an empty one decodes as nil.
func (r *reader) bytes() []byte {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	v := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return v
}

func (r *reader) f64() float64 {
	if len(r.b) < 8 {
		r.failf("truncated float")
		return 0
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(r.b))
	r.b = r.b[8:]
	return v
}

// i32s reads a list; an empty list decodes as nil.
func (r *reader) i32s() []int32 {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = r.i32()
	}
	return v
}

// Record bodies.

const (
	brokerFenced   = 1 << 0
	brokerShutdown = 1 << 1

	changeISR      = 1 << 0
	changeReplicas = 1 << 1
	changeAdding   = 1 << 2
	changeRemoving = 1 << 3

	configDelete = 1 << 0
)

func (x *RegisterBrokerRecord) encode(w *writer) {
	w.i32(x.ID)
	w.id(x.Incarnation)
	w.varint(x.Epoch)
	w.uvarint(uint64(len(x.Endpoints)))
	for _, e := range x.Endpoints {
		w.str(e.Listener)
		w.str(e.Host)
		w.uvarint(uint64(e.Port))
		w.i32(int32(e.SecurityProtocol))
	}
	w.str(x.Rack)
	var flags uint8
	if x.Fenced {
		flags |= brokerFenced
	}
	if x.InControlledShutdown {
		flags |= brokerShutdown
	}
	w.u8(flags)
}

func (x *RegisterBrokerRecord) decode(r *reader, _ uint8) {
	x.ID = r.i32()
	x.Incarnation = r.id()
	x.Epoch = r.varint()
	if n := r.count(4); n > 0 {
		x.Endpoints = make([]Endpoint, n)
		for i := range x.Endpoints {
			e := &x.Endpoints[i]
			e.Listener = r.str()
			e.Host = r.str()
			port := r.uvarint()
			if port > math.MaxUint16 {
				r.failf("port %d", port)
			}
			e.Port = uint16(port)
			sp := r.i32()
			if sp < math.MinInt16 || sp > math.MaxInt16 {
				r.failf("security protocol %d", sp)
			}
			e.SecurityProtocol = int16(sp)
		}
	}
	x.Rack = r.str()
	flags := r.u8()
	if flags&^(brokerFenced|brokerShutdown) != 0 {
		r.failf("broker flags %#x", flags)
	}
	x.Fenced = flags&brokerFenced != 0
	x.InControlledShutdown = flags&brokerShutdown != 0
}

// encodeBrokerEpoch writes the body of the records that name a broker and the
// epoch of its registration.
func encodeBrokerEpoch(w *writer, id int32, epoch int64) { w.i32(id); w.varint(epoch) }

func (x *UnregisterBrokerRecord) encode(w *writer)   { encodeBrokerEpoch(w, x.ID, x.Epoch) }
func (x *FenceBrokerRecord) encode(w *writer)        { encodeBrokerEpoch(w, x.ID, x.Epoch) }
func (x *UnfenceBrokerRecord) encode(w *writer)      { encodeBrokerEpoch(w, x.ID, x.Epoch) }
func (x *ControlledShutdownRecord) encode(w *writer) { encodeBrokerEpoch(w, x.ID, x.Epoch) }

func (x *UnregisterBrokerRecord) decode(r *reader, _ uint8)   { x.ID, x.Epoch = r.i32(), r.varint() }
func (x *FenceBrokerRecord) decode(r *reader, _ uint8)        { x.ID, x.Epoch = r.i32(), r.varint() }
func (x *UnfenceBrokerRecord) decode(r *reader, _ uint8)      { x.ID, x.Epoch = r.i32(), r.varint() }
func (x *ControlledShutdownRecord) decode(r *reader, _ uint8) { x.ID, x.Epoch = r.i32(), r.varint() }

func (x *TopicRecord) encode(w *writer)                { w.str(x.Name); w.id(x.ID) }
func (x *TopicRecord) decode(r *reader, _ uint8)       { x.Name = r.str(); x.ID = r.id() }
func (x *RemoveTopicRecord) encode(w *writer)          { w.id(x.ID) }
func (x *RemoveTopicRecord) decode(r *reader, _ uint8) { x.ID = r.id() }

func (x *PartitionRecord) encode(w *writer) {
	w.id(x.TopicID)
	w.i32(x.Partition)
	w.i32s(x.Replicas)
	w.i32s(x.ISR)
	w.i32s(x.Adding)
	w.i32s(x.Removing)
	w.i32(x.Leader)
	w.i32(x.LeaderEpoch)
	w.i32(x.PartitionEpoch)
	w.u8(uint8(x.LeaderRecovery))
}

func (x *PartitionRecord) decode(r *reader, _ uint8) {
	x.TopicID = r.id()
	x.Partition = r.i32()
	x.Replicas = r.i32s()
	x.ISR = r.i32s()
	x.Adding = r.i32s()
	x.Removing = r.i32s()
	x.Leader = r.i32()
	x.LeaderEpoch = r.i32()
	x.PartitionEpoch = r.i32()
	x.LeaderRecovery = int8(r.u8())
}

func (x *PartitionChangeRecord) encode(w *writer) {
	w.id(x.TopicID)
	w.i32(x.Partition)
	var flags uint8
	lists := [...][]int32{x.ISR, x.Replicas, x.Adding, x.Removing}
	for i, l := range lists {
		if l != nil {
			flags |= 1 << i
		}
	}
	w.u8(flags)
	for _, l := range lists {
		if l != nil {
			w.i32s(l)
		}
	}
	w.i32(x.Leader)
	w.u8(uint8(x.LeaderRecovery))
	w.i32(x.LeaderEpoch)
	w.i32(x.PartitionEpoch)
}

func (x *PartitionChangeRecord) decode(r *reader, _ uint8) {
	x.TopicID = r.id()
	x.Partition = r.i32()
	flags := r.u8()
	if flags&^(changeISR|changeReplicas|changeAdding|changeRemoving) != 0 {
		r.failf("partition change flags %#x", flags)
	}
	lists := [...]*[]int32{&x.ISR, &x.Replicas, &x.Adding, &x.Removing}
	for i, l := range lists {
		if flags&(1<<i) != 0 {
			// A present list is never nil, even when empty: empty clears.
			*l = append(make([]int32, 0), r.i32s()...)
		}
	}
	x.Leader = r.i32()
	x.LeaderRecovery = int8(r.u8())
	x.LeaderEpoch = r.i32()
	x.PartitionEpoch = r.i32()
}

func (x *ConfigRecord) encode(w *writer) {
	w.u8(uint8(x.Resource))
	w.str(x.Name)
	w.str(x.Key)
	if x.Delete {
		w.u8(configDelete)
		return
	}
	w.u8(0)
	w.str(x.Value)
}

func (x *ConfigRecord) decode(r *reader, _ uint8) {
	x.Resource = ResourceType(r.u8())
	x.Name = r.str()
	x.Key = r.str()
	switch r.u8() {
	case 0:
		x.Value = r.str()
	case configDelete:
		x.Delete = true
	default:
		r.failf("config flags")
	}
}

func (x *ProducerIDsRecord) encode(w *writer) {
	w.i32(x.BrokerID)
	w.varint(x.BrokerEpoch)
	w.varint(x.Next)
}

func (x *ProducerIDsRecord) decode(r *reader, _ uint8) {
	x.BrokerID = r.i32()
	x.BrokerEpoch = r.varint()
	x.Next = r.varint()
}

func (x *AccessControlEntryRecord) encode(w *writer) {
	w.id(x.ID)
	w.u8(uint8(x.ResourceType))
	w.str(x.ResourceName)
	w.u8(uint8(x.PatternType))
	w.str(x.Principal)
	w.str(x.Host)
	w.u8(uint8(x.Operation))
	w.u8(uint8(x.PermissionType))
}

func (x *AccessControlEntryRecord) decode(r *reader, _ uint8) {
	x.ID = r.id()
	x.ResourceType = int8(r.u8())
	x.ResourceName = r.str()
	x.PatternType = int8(r.u8())
	x.Principal = r.str()
	x.Host = r.str()
	x.Operation = int8(r.u8())
	x.PermissionType = int8(r.u8())
}

func (x *RemoveAccessControlEntryRecord) encode(w *writer)          { w.id(x.ID) }
func (x *RemoveAccessControlEntryRecord) decode(r *reader, _ uint8) { x.ID = r.id() }

func (x *UserScramCredentialRecord) encode(w *writer) {
	w.str(x.Name)
	w.u8(uint8(x.Mechanism))
	w.bytes(x.Salt)
	w.bytes(x.StoredKey)
	w.bytes(x.ServerKey)
	w.i32(x.Iterations)
}

func (x *UserScramCredentialRecord) decode(r *reader, _ uint8) {
	x.Name = r.str()
	x.Mechanism = int8(r.u8())
	x.Salt = r.bytes()
	x.StoredKey = r.bytes()
	x.ServerKey = r.bytes()
	x.Iterations = r.i32()
}

func (x *RemoveUserScramCredentialRecord) encode(w *writer) { w.str(x.Name); w.u8(uint8(x.Mechanism)) }
func (x *RemoveUserScramCredentialRecord) decode(r *reader, _ uint8) {
	x.Name = r.str()
	x.Mechanism = int8(r.u8())
}

// A quota entity is one flags byte, two bits per part (user, client id,
// ip): present, then default; then the names of the present parts that
// are not the default, in that order.
const (
	quotaPresent = 1 << 0
	quotaDefault = 1 << 1
	quotaRemove  = 1 << 0
)

func (x *ClientQuotaRecord) encode(w *writer) {
	parts := [...]QuotaName{x.Entity.User, x.Entity.ClientID, x.Entity.IP}
	var flags uint8
	for i, p := range parts {
		if p.Present {
			flags |= quotaPresent << (2 * i)
		}
		if p.Default {
			flags |= quotaDefault << (2 * i)
		}
	}
	w.u8(flags)
	for _, p := range parts {
		if p.Present && !p.Default {
			w.str(p.Name)
		}
	}
	w.str(x.Key)
	if x.Remove {
		w.u8(quotaRemove)
		return
	}
	w.u8(0)
	w.f64(x.Value)
}

func (x *ClientQuotaRecord) decode(r *reader, _ uint8) {
	flags := r.u8()
	if flags&0xc0 != 0 {
		r.failf("quota entity flags %#x", flags)
	}
	parts := [...]*QuotaName{&x.Entity.User, &x.Entity.ClientID, &x.Entity.IP}
	for i, p := range parts {
		f := flags >> (2 * i) & 3
		switch {
		case f == quotaPresent:
			*p = Named(r.str())
		case f == quotaPresent|quotaDefault:
			*p = DefaultName
		case f != 0:
			r.failf("quota entity flags %#x", flags)
		}
	}
	x.Key = r.str()
	switch r.u8() {
	case 0:
		// NaN is no quota, and would not compare equal to itself.
		if x.Value = r.f64(); math.IsNaN(x.Value) {
			r.failf("client quota value NaN")
		}
	case quotaRemove:
		x.Remove = true
	default:
		r.failf("client quota flags")
	}
}

func (x *FeatureLevelRecord) encode(w *writer) {
	w.str(x.Name)
	w.varint(int64(x.Level))
}

func (x *FeatureLevelRecord) decode(r *reader, _ uint8) {
	x.Name = r.str()
	level := r.varint()
	if level < 0 || level > math.MaxInt16 {
		r.failf("feature level %d", level)
	}
	x.Level = int16(level)
}
