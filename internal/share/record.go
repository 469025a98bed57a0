package share

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// RecordKind tells a snapshot from a delta.
type RecordKind uint8

const (
	// Snapshot is the whole state of a partition; it replaces whatever
	// came before it (of the same or an older state epoch).
	Snapshot RecordKind = 1
	// Delta is the state of the offsets one operation changed, and the
	// start offset after it.
	Delta RecordKind = 2
)

func (k RecordKind) String() string {
	switch k {
	case Snapshot:
		return "snapshot"
	case Delta:
		return "delta"
	}
	return fmt.Sprintf("RecordKind(%d)", uint8(k))
}

// StateBatch is a range of offsets in one state with one delivery count,
// as in WriteShareGroupState's StateBatches.
type StateBatch struct {
	First, Last   int64
	State         RecordState
	DeliveryCount int16
}

// StateRecord is one durable record of a partition's delivery state. The
// owner appends it to its store keyed by StateKey; Restore rebuilds the
// partition from the records in the order they were written.
type StateRecord struct {
	Kind        RecordKind
	StateEpoch  int32
	LeaderEpoch int32
	// StartOffset is the SPSO after the change.
	StartOffset int64
	// Batches are sorted, do not overlap and start at or after
	// StartOffset.
	Batches []StateBatch
}

// IsZero reports whether the record is the zero value: an operation that
// changed nothing durable. There is nothing to persist.
func (r *StateRecord) IsZero() bool { return r.Kind == 0 }

// WithoutLocks is the part of an acquisition's change that must be
// durable: r with its acquired records as they were before this
// acquisition took them (available, one delivery less), those that were
// fresh (delivery count 1 now) left out, as Restore makes them anyway;
// the zero record when nothing else changed (no other batch, and the
// start offset is still startBefore, the start offset before the
// acquisition).
//
// Acquisitions need not be durable, as in Kafka, which writes share state
// on acknowledgement, release and expiry only: after a restart Restore
// ends every lock, so a lost acquisition only means its records are
// available again with the delivery count they had before it. Such a
// record is delivered once more with the same count as the delivery the
// restart cut short, and a record on its last attempt may be delivered
// once more than the limit (its count never shows more than the limit).
// Nothing acknowledged is lost: an acknowledgement's record carries the
// state and count of its offsets, and Restore makes the offsets before
// them that no record names available. Writing a redelivery as its state
// before keeps the counts of an expiry that the same acquisition ended:
// without it, a record could come back with none of its deliveries
// counted. A drain of fresh records writes nothing.
func (r StateRecord) WithoutLocks(startBefore int64) StateRecord {
	if r.IsZero() {
		return r
	}
	out := r
	out.Batches = nil
	for _, b := range r.Batches {
		if b.State == Acquired {
			if b.DeliveryCount <= 1 {
				continue
			}
			b.State, b.DeliveryCount = Available, b.DeliveryCount-1
		}
		out.Batches = appendBatch(out.Batches, b)
	}
	if len(out.Batches) == 0 && out.StartOffset == startBefore {
		return StateRecord{}
	}
	return out
}

// Errors of the state record and key codecs.
var (
	ErrTruncated      = errors.New("share: state record truncated")
	ErrUnknownVersion = errors.New("share: unknown state record version")
	ErrCorrupt        = errors.New("share: corrupt state record")
)

// recordVersion is the only encoding so far. A reader meeting a newer one
// fails rather than guessing.
const recordVersion = 0

// headerLen is kind, version, state epoch, leader epoch, start offset.
const headerLen = 1 + 1 + 4 + 4 + 8

// minBatchLen is the smallest encoded batch: two one-byte varints, the
// state, a one-byte count.
const minBatchLen = 4

// Validate checks what the encoding relies on.
func (r *StateRecord) Validate() error {
	if r.Kind != Snapshot && r.Kind != Delta {
		return fmt.Errorf("%w: kind %d", ErrCorrupt, r.Kind)
	}
	if r.StartOffset < 0 {
		return fmt.Errorf("%w: start offset %d", ErrCorrupt, r.StartOffset)
	}
	cursor := r.StartOffset
	for _, b := range r.Batches {
		switch {
		case b.First < cursor || b.Last < b.First:
			return fmt.Errorf("%w: batch %d-%d out of order (from %d)", ErrCorrupt, b.First, b.Last, cursor)
		case !b.State.valid():
			return fmt.Errorf("%w: state %d", ErrCorrupt, b.State)
		case b.DeliveryCount < 0:
			return fmt.Errorf("%w: delivery count %d", ErrCorrupt, b.DeliveryCount)
		case b.Last == math.MaxInt64:
			return fmt.Errorf("%w: batch ends at the last offset", ErrCorrupt)
		}
		cursor = b.Last + 1
	}
	return nil
}

// AppendTo appends the encoding of r to dst.
//
// Layout (version 0): kind u8, version u8, state epoch i32, leader epoch
// i32, start offset i64 (big endian), batch count uvarint, then per
// batch: first - cursor uvarint, last - first uvarint, state u8, delivery
// count uvarint, where cursor starts at the start offset and moves to
// last + 1 after each batch.
func (r *StateRecord) AppendTo(dst []byte) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return dst, err
	}
	dst = append(dst, byte(r.Kind), recordVersion)
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.StateEpoch))
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.LeaderEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.StartOffset))
	dst = binary.AppendUvarint(dst, uint64(len(r.Batches)))
	cursor := r.StartOffset
	for _, b := range r.Batches {
		dst = binary.AppendUvarint(dst, uint64(b.First-cursor))
		dst = binary.AppendUvarint(dst, uint64(b.Last-b.First))
		dst = append(dst, byte(b.State))
		dst = binary.AppendUvarint(dst, uint64(b.DeliveryCount))
		cursor = b.Last + 1
	}
	return dst, nil
}

// DecodeStateRecord decodes one record. It never panics: every length and
// offset is checked, and what it returns passes Validate.
func DecodeStateRecord(b []byte) (StateRecord, error) {
	var r StateRecord
	if len(b) < headerLen {
		return r, ErrTruncated
	}
	r.Kind = RecordKind(b[0])
	if r.Kind != Snapshot && r.Kind != Delta {
		return StateRecord{}, fmt.Errorf("%w: kind %d", ErrCorrupt, b[0])
	}
	if b[1] != recordVersion {
		return StateRecord{}, fmt.Errorf("%w: %d", ErrUnknownVersion, b[1])
	}
	r.StateEpoch = int32(binary.BigEndian.Uint32(b[2:]))
	r.LeaderEpoch = int32(binary.BigEndian.Uint32(b[6:]))
	r.StartOffset = int64(binary.BigEndian.Uint64(b[10:]))
	if r.StartOffset < 0 {
		return StateRecord{}, fmt.Errorf("%w: start offset %d", ErrCorrupt, r.StartOffset)
	}
	n, b, k := uvarint(b[headerLen:])
	if k <= 0 {
		return StateRecord{}, uvarintErr(k)
	}
	if n > uint64(len(b)/minBatchLen) {
		return StateRecord{}, fmt.Errorf("%w: %d batches in %d bytes", ErrTruncated, n, len(b))
	}
	if n > 0 {
		r.Batches = make([]StateBatch, 0, n)
	}
	cursor := r.StartOffset
	for range n {
		var d, span, count uint64
		if d, b, k = uvarint(b); k <= 0 {
			return StateRecord{}, uvarintErr(k)
		}
		if span, b, k = uvarint(b); k <= 0 {
			return StateRecord{}, uvarintErr(k)
		}
		if len(b) == 0 {
			return StateRecord{}, ErrTruncated
		}
		st := RecordState(int8(b[0]))
		b = b[1:]
		if count, b, k = uvarint(b); k <= 0 {
			return StateRecord{}, uvarintErr(k)
		}
		if !st.valid() || count > math.MaxInt16 {
			return StateRecord{}, fmt.Errorf("%w: state %d, delivery count %d", ErrCorrupt, st, count)
		}
		// first = cursor + d and last = first + span, both below MaxInt64
		// so that cursor = last + 1 cannot overflow.
		if d >= uint64(math.MaxInt64-cursor) {
			return StateRecord{}, fmt.Errorf("%w: offset overflow", ErrCorrupt)
		}
		first := cursor + int64(d)
		if span >= uint64(math.MaxInt64-first) {
			return StateRecord{}, fmt.Errorf("%w: offset overflow", ErrCorrupt)
		}
		last := first + int64(span)
		r.Batches = append(r.Batches, StateBatch{First: first, Last: last, State: st, DeliveryCount: int16(count)})
		cursor = last + 1
	}
	if len(b) != 0 {
		return StateRecord{}, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(b))
	}
	return r, nil
}

// uvarint reads a uvarint in its shortest form: a longer form of the same
// value would give a second encoding of one record or key, and keys must
// compare equal byte for byte. k is 0 when b is too short, -1 when the
// encoding is not the shortest or overflows.
func uvarint(b []byte) (v uint64, rest []byte, k int) {
	v, k = binary.Uvarint(b)
	if k <= 0 {
		if k < 0 {
			k = -1
		}
		return 0, b, k
	}
	if k != (bits.Len64(v|1)+6)/7 {
		return 0, b, -1
	}
	return v, b[k:], k
}

func uvarintErr(k int) error {
	if k == 0 {
		return ErrTruncated
	}
	return fmt.Errorf("%w: malformed varint", ErrCorrupt)
}

// StateKey names the partition a StateRecord belongs to, like Kafka's
// share-group state key (group, topic id, partition).
type StateKey struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// maxGroupLen bounds the group id a key may carry: Kafka's string fields
// are at most 32767 bytes.
const maxGroupLen = math.MaxInt16

// AppendTo appends the key's encoding to dst: version u8, group length
// uvarint, group, topic id, partition i32.
func (k StateKey) AppendTo(dst []byte) ([]byte, error) {
	if len(k.Group) > maxGroupLen {
		return dst, fmt.Errorf("%w: group id of %d bytes", ErrCorrupt, len(k.Group))
	}
	dst = append(dst, recordVersion)
	dst = binary.AppendUvarint(dst, uint64(len(k.Group)))
	dst = append(dst, k.Group...)
	dst = append(dst, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(dst, uint32(k.Partition)), nil
}

// DecodeStateKey decodes a key written by StateKey.AppendTo.
func DecodeStateKey(b []byte) (StateKey, error) {
	var k StateKey
	if len(b) < 1 {
		return k, ErrTruncated
	}
	if b[0] != recordVersion {
		return k, fmt.Errorf("%w: %d", ErrUnknownVersion, b[0])
	}
	n, b, used := uvarint(b[1:])
	if used <= 0 {
		return k, uvarintErr(used)
	}
	if n > maxGroupLen {
		return k, fmt.Errorf("%w: group id of %d bytes", ErrCorrupt, n)
	}
	if uint64(len(b)) != n+16+4 {
		if uint64(len(b)) < n+16+4 {
			return k, ErrTruncated
		}
		return k, fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, uint64(len(b))-n-20)
	}
	k.Group = string(b[:n])
	copy(k.TopicID[:], b[n:n+16])
	k.Partition = int32(binary.BigEndian.Uint32(b[n+16:]))
	return k, nil
}

// Restore rebuilds a partition from its state records in the order they
// were written: the newest snapshot of the highest state epoch and the
// deltas of that epoch after it. Records of an older state epoch (from
// before a Reset) are skipped. Records that were acquired come back as if
// their lock expired: available with the delivery count they had, or
// archived if that count reached the limit. Nothing acknowledged is
// delivered again, and nothing is delivered more than the limit.
func Restore(cfg Config, records []StateRecord) (*Partition, error) {
	p, err := replay(cfg, records)
	if err != nil {
		return nil, err
	}
	// The locks died with the old owner: end them as an expiry would, so
	// that a record on its last delivery attempt is archived, not
	// delivered once more.
	for i := range p.runs {
		r := &p.runs[i]
		if r.state != Acquired {
			continue
		}
		r.state, r.member, r.deadline = Available, "", 0
		if r.count >= p.cfg.DeliveryCountLimit {
			r.state = Archived
		}
	}
	p.coalesce()
	p.advance()
	p.touched, p.moved = p.touched[:0], false
	return p, nil
}

// Fold merges a partition's state records, in the order they were
// written, into one Snapshot from which Restore rebuilds the same
// partition: what the share coordinator holding a partition's records
// hands to the partition's leader. Unlike Restore it keeps acquired
// records as they are; the leader's Restore ends their locks under its
// own limits.
func Fold(records []StateRecord) (StateRecord, error) {
	p, err := replay(Config{}, records)
	if err != nil {
		return StateRecord{}, err
	}
	return p.Snapshot(), nil
}

// replay applies records in order: the newest snapshot of the highest
// state epoch and the deltas of that epoch after it.
func replay(cfg Config, records []StateRecord) (*Partition, error) {
	var p *Partition
	for i := range records {
		rec := &records[i]
		if err := rec.Validate(); err != nil {
			return nil, fmt.Errorf("share: state record %d: %w", i, err)
		}
		if p != nil && rec.StateEpoch < p.stateEpoch {
			continue
		}
		switch rec.Kind {
		case Snapshot:
			p = New(cfg, rec.StartOffset)
			p.stateEpoch = rec.StateEpoch
			p.leaderEpoch = rec.LeaderEpoch
			p.apply(rec)
		case Delta:
			if p == nil {
				return nil, fmt.Errorf("share: state record %d: %w: delta before any snapshot", i, ErrCorrupt)
			}
			if rec.StateEpoch > p.stateEpoch {
				return nil, fmt.Errorf("share: state record %d: %w: delta of state epoch %d after snapshot of epoch %d", i, ErrCorrupt, rec.StateEpoch, p.stateEpoch)
			}
			p.leaderEpoch = max(p.leaderEpoch, rec.LeaderEpoch)
			p.apply(rec)
		}
	}
	if p == nil {
		return nil, fmt.Errorf("share: %w: no snapshot", ErrCorrupt)
	}
	return p, nil
}

// apply writes a validated record's batches, then moves the start offset.
func (p *Partition) apply(rec *StateRecord) {
	for _, b := range rec.Batches {
		p.overwrite(b)
	}
	p.moveStart(rec.StartOffset)
}

// ParseCoordinatorKey reads a share coordinator key as FindCoordinator
// carries it (key type 2): "group:topicId:partition", the topic id in
// Kafka's printed form (22 characters of unpadded URL-safe base64). The
// group may itself hold colons; the last two fields are the topic id
// and the partition.
func ParseCoordinatorKey(key string) (StateKey, error) {
	i := strings.LastIndexByte(key, ':')
	if i < 0 {
		return StateKey{}, fmt.Errorf("share: coordinator key %q is not group:topicId:partition", key)
	}
	j := strings.LastIndexByte(key[:i], ':')
	if j < 0 {
		return StateKey{}, fmt.Errorf("share: coordinator key %q is not group:topicId:partition", key)
	}
	n, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil || n < 0 {
		return StateKey{}, fmt.Errorf("share: coordinator key %q: bad partition", key)
	}
	raw, err := base64.RawURLEncoding.DecodeString(key[j+1 : i])
	if err != nil || len(raw) != 16 {
		return StateKey{}, fmt.Errorf("share: coordinator key %q: bad topic id", key)
	}
	k := StateKey{Group: key[:j], Partition: int32(n)}
	copy(k.TopicID[:], raw)
	return k, nil
}

// MergeDeltas is one delta that Restore applies as it applies a and then
// b, two deltas of one partition written in that order: b's batches over
// a's, b's start offset, a's batches below it left out. The owner uses it
// to write a partition's changes of a few milliseconds as one record
// (group commit). ok is false when they do not merge: either is not a
// delta, or their state or leader epochs differ; the zero record merges
// with anything as the other.
func MergeDeltas(a, b StateRecord) (StateRecord, bool) {
	switch {
	case a.IsZero():
		return b, true
	case b.IsZero():
		return a, true
	case a.Kind != Delta || b.Kind != Delta || a.StateEpoch != b.StateEpoch || a.LeaderEpoch != b.LeaderEpoch:
		return StateRecord{}, false
	}
	out := b
	out.StartOffset = max(a.StartOffset, b.StartOffset)
	out.Batches = make([]StateBatch, 0, len(a.Batches)+len(b.Batches))
	older := slices.Clone(a.Batches) // cut below; a's own stay as they are
	add := func(x StateBatch) {
		x.First = max(x.First, out.StartOffset)
		if x.First <= x.Last {
			out.Batches = appendBatch(out.Batches, x)
		}
	}
	i := 0 // a's batches before i are written out
	for _, y := range b.Batches {
		// a's parts before y, then y over them.
		for ; i < len(older) && older[i].First < y.First; i++ {
			x := older[i]
			if x.Last >= y.First {
				rest := x
				rest.First = y.First
				x.Last = y.First - 1
				older[i] = rest // the part from y on, cut below
				add(x)
				break
			}
			add(x)
		}
		add(y)
		// Drop a's parts that y covers.
		for ; i < len(older) && older[i].First <= y.Last; i++ {
			if x := older[i]; x.Last > y.Last {
				x.First = y.Last + 1
				older[i] = x
				break
			}
		}
	}
	for ; i < len(older); i++ {
		add(older[i])
	}
	return out, true
}
