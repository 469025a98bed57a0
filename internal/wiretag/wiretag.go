package wiretag

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareFetchAllLeaders is the tag of a record_limit ShareFetch whose
// consumer asks every leader at once when it waits, as weir's
// ShareConsumer does (the Java client asks one broker at a time). A weir
// broker then keeps the request's MaxWaitMs instead of answering an empty
// fetch early to send the consumer on to another broker
// (weir.share.fetch.elsewhere.wait.ms). Its value is one version byte, 1.
const ShareFetchAllLeaders uint32 = 0x7765

// SetShareFetchAllLeaders marks tags with ShareFetchAllLeaders.
func SetShareFetchAllLeaders(tags *kmsg.Tags) { tags.Set(ShareFetchAllLeaders, []byte{1}) }

// HasShareFetchAllLeaders reports whether tags carry ShareFetchAllLeaders
// with a value this version understands.
func HasShareFetchAllLeaders(tags *kmsg.Tags) bool { return hasFlag(tags, ShareFetchAllLeaders) }

// Tags of a WriteShareGroupState partition written by a weir broker
// (internal/sharestate). weir's share-state records say more than Kafka's
// write carries (a snapshot or a delta, a deletion, an administrative
// reset), so a weir leader's write also carries the record as weir stores
// it; a write without them is a Kafka-style delta.
const (
	// ShareStateRecord is the state record's encoding (share.StateRecord
	// AppendTo); absent for a deletion.
	ShareStateRecord uint32 = 0x7765
	// ShareStateFlags is one byte of ShareStateFlag bits.
	ShareStateFlags uint32 = 0x7766
)

// Bits of the ShareStateFlags byte.
const (
	ShareStateDelete byte = 1 << iota
	ShareStateReinit
)

// ShareFetchBacklogWanted is the tag of a ShareFetch whose consumer wants
// to know where the backlog is (weir's ShareConsumer): a weir broker then
// answers with ShareFetchBacklog. Its value is one version byte, 1.
const ShareFetchBacklogWanted uint32 = 0x7766

// SetShareFetchBacklogWanted marks tags with ShareFetchBacklogWanted.
func SetShareFetchBacklogWanted(tags *kmsg.Tags) { tags.Set(ShareFetchBacklogWanted, []byte{1}) }

// HasShareFetchBacklogWanted reports whether tags carry
// ShareFetchBacklogWanted with a value this version understands.
func HasShareFetchBacklogWanted(tags *kmsg.Tags) bool { return hasFlag(tags, ShareFetchBacklogWanted) }

// ShareFetchDeferAcks is the tag of a ShareFetch whose consumer takes
// its acknowledgements' durability out of the round (weir's
// ShareConsumer in record_limit mode): "answer once acquired; report the
// acknowledgements' durability later". A weir broker applies the
// request's acknowledgements in memory, acquires, and answers without
// waiting for their write to __share_group_state; the write stays
// pending with the member's share session. A later ShareAcknowledge,
// ShareFetch without the tag, or session close of that member waits for
// it, and a write that failed is reported on the member's next answer
// for that partition (AcknowledgeErrorCode on a ShareFetch, ErrorCode on
// a ShareAcknowledge), its records rolled back to be delivered again. Its
// value is one version byte, 1.
const ShareFetchDeferAcks uint32 = 0x7767

// SetShareFetchDeferAcks marks tags with ShareFetchDeferAcks.
func SetShareFetchDeferAcks(tags *kmsg.Tags) { tags.Set(ShareFetchDeferAcks, []byte{1}) }

// HasShareFetchDeferAcks reports whether tags carry ShareFetchDeferAcks
// with a value this version understands.
func HasShareFetchDeferAcks(tags *kmsg.Tags) bool { return hasFlag(tags, ShareFetchDeferAcks) }

// ShareFetchBacklog is the tag of a ShareFetch response (top level) that
// says, for each share partition of the member's session on this leader,
// how many records wait there to be acquired: the records from the share
// partition's start offset to the high watermark that are neither
// delivery complete nor acquired. A client fetches from the leaders with
// the most first (the share-groups seed post's third mitigation: the
// broker tells the client where the lag is). Other clients skip the tag.
//
// The value: a version byte (1), a uvarint count, then per partition the
// 16-byte topic id, the partition as a zigzag varint and the records as a
// uvarint.
const ShareFetchBacklog uint32 = 0x7765

// PartitionBacklog is one partition's entry of ShareFetchBacklog.
type PartitionBacklog struct {
	TopicID   [16]byte
	Partition int32
	Records   int64
}

// MaxBacklogEntries bounds a decoded ShareFetchBacklog: more than a share
// session can hold is a broken value.
const MaxBacklogEntries = 1 << 20

// SetShareFetchBacklog puts entries in tags as ShareFetchBacklog.
func SetShareFetchBacklog(tags *kmsg.Tags, entries []PartitionBacklog) {
	b := []byte{1}
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = append(b, e.TopicID[:]...)
		b = binary.AppendVarint(b, int64(e.Partition))
		b = binary.AppendUvarint(b, uint64(max(e.Records, 0)))
	}
	tags.Set(ShareFetchBacklog, b)
}

// ErrBadBacklog is a ShareFetchBacklog value that does not decode.
var ErrBadBacklog = errors.New("wiretag: malformed share fetch backlog")

// ShareFetchBacklogOf decodes the ShareFetchBacklog of tags: ok false
// when the tag is absent or of another version, ErrBadBacklog when it is
// there and broken. It never panics on any bytes.
func ShareFetchBacklogOf(tags *kmsg.Tags) (entries []PartitionBacklog, ok bool, err error) {
	var raw []byte
	found := false
	tags.Each(func(k uint32, v []byte) {
		if k == ShareFetchBacklog {
			raw, found = v, true
		}
	})
	if !found || len(raw) == 0 || raw[0] != 1 {
		return nil, false, nil
	}
	b := raw[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > MaxBacklogEntries || n > uint64(len(b)) {
		return nil, true, ErrBadBacklog
	}
	b = b[k:]
	entries = make([]PartitionBacklog, 0, n)
	for range n {
		var e PartitionBacklog
		if len(b) < 16 {
			return nil, true, ErrBadBacklog
		}
		copy(e.TopicID[:], b[:16])
		b = b[16:]
		p, k := binary.Varint(b)
		if k <= 0 || p < math.MinInt32 || p > math.MaxInt32 {
			return nil, true, ErrBadBacklog
		}
		b = b[k:]
		r, k := binary.Uvarint(b)
		if k <= 0 || r > math.MaxInt64 {
			return nil, true, ErrBadBacklog
		}
		b = b[k:]
		e.Partition, e.Records = int32(p), int64(r)
		entries = append(entries, e)
	}
	if len(b) != 0 {
		return nil, true, ErrBadBacklog
	}
	return entries, true, nil
}

// ControllerOffset asks, on a request a weir broker forwards to the
// active controller (one of the controller's API keys, at a flexible
// version), for the metadata offset at which the request's outcome was
// committed, and carries that offset on the response. The forwarding
// broker waits until it has applied the offset before it answers its
// client, so the client's next request to it sees the change. On the
// request its value is one version byte, 1; on the response the offset,
// 8 bytes big endian.
const ControllerOffset uint32 = 0x7765

// AskControllerOffset marks a request's tags with ControllerOffset.
func AskControllerOffset(tags *kmsg.Tags) { tags.Set(ControllerOffset, []byte{1}) }

// AsksControllerOffset reports whether a request's tags ask for the
// committed offset.
func AsksControllerOffset(tags *kmsg.Tags) bool { return hasFlag(tags, ControllerOffset) }

// hasFlag reports whether tags carry key with the value of a flag tag of
// version 1: the one byte 1.
func hasFlag(tags *kmsg.Tags, key uint32) bool {
	has := false
	tags.Each(func(k uint32, v []byte) {
		has = has || k == key && len(v) == 1 && v[0] == 1
	})
	return has
}

// SetControllerOffset puts the committed offset on a response's tags.
func SetControllerOffset(tags *kmsg.Tags, offset int64) {
	tags.Set(ControllerOffset, binary.BigEndian.AppendUint64(nil, uint64(offset)))
}

// TakeControllerOffset removes ControllerOffset from a response's tags
// and returns its offset; ok is false when it is absent or malformed.
func TakeControllerOffset(tags *kmsg.Tags) (offset int64, ok bool) {
	var rest kmsg.Tags
	tags.Each(func(k uint32, v []byte) {
		if k != ControllerOffset {
			rest.Set(k, v)
			return
		}
		if len(v) == 8 {
			offset, ok = int64(binary.BigEndian.Uint64(v)), true
		}
	})
	*tags = rest
	return offset, ok
}
