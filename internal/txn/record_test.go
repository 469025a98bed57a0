package txn

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"testing"
)

// Golden records: the bytes Apache Kafka 4.3.0's own TransactionLog.keyToBytes
// and TransactionLog.valueToBytes(TxnTransitMetadata, TransactionVersion)
// return for the same state (called from a ten-line Java program against
// the 4.3.0 jars). The values are encoded at the cluster's
// transaction.version: version 0 at level 0, the flexible version 1 at
// levels 1 and 2.
var goldenValues = []struct {
	name string
	hex  string
	v    Value
}{
	{
		name: "v0 empty",
		hex:  "000000000000000003e800000000ea6000ffffffff0000018bcfe56800ffffffffffffffff",
		v: Value{Version: 0, ProducerID: 1000, PrevProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1,
			ProducerEpoch: 0, TimeoutMs: 60000, Status: Empty, LastUpdateMs: 1700000000000, StartMs: -1},
	},
	{
		name: "v0 ongoing",
		hex:  "000000000000000003e800030000ea60010000000100016100000001000000000000018bcfe569f40000018bcfe56800",
		v: Value{Version: 0, ProducerID: 1000, PrevProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1,
			ProducerEpoch: 3, TimeoutMs: 60000, Status: Ongoing, Partitions: []TopicPartitions{{"a", []int32{0}}},
			LastUpdateMs: 1700000000500, StartMs: 1700000000000},
	},
	{
		name: "v1 empty",
		hex:  "000100000000000003e800000000ea6000000000018bcfe56800ffffffffffffffff01000800000000000003e8",
		v: Value{Version: 1, ProducerID: 1000, PrevProducerID: 1000, NextProducerID: -1, NextProducerEpoch: -1,
			ProducerEpoch: 0, TimeoutMs: 60000, Status: Empty, LastUpdateMs: 1700000000000, StartMs: -1},
	},
	{
		name: "v1 ongoing, client on transaction version 2",
		hex:  "000100000000000003e800030000ea60010202610200000000000000018bcfe569f40000018bcfe5680002000800000000000003e802020002",
		v: Value{Version: 1, ProducerID: 1000, PrevProducerID: 1000, NextProducerID: -1, NextProducerEpoch: -1,
			ProducerEpoch: 3, TimeoutMs: 60000, Status: Ongoing, Partitions: []TopicPartitions{{"a", []int32{0}}},
			LastUpdateMs: 1700000000500, StartMs: 1700000000000, ClientVersion: 2},
	},
	{
		name: "v1 prepare commit moving to the next producer id",
		hex:  "000100000000000000057fff000dbba0020202610200000003000000018bcfe569f40000018bcfe5680003000800000000000000050108000000000000004d02020002",
		v: Value{Version: 1, ProducerID: 5, PrevProducerID: 5, NextProducerID: 77, NextProducerEpoch: -1,
			ProducerEpoch: math.MaxInt16, TimeoutMs: 900000, Status: PrepareCommit, Partitions: []TopicPartitions{{"a", []int32{3}}},
			LastUpdateMs: 1700000000500, StartMs: 1700000000000, ClientVersion: 2},
	},
	{
		name: "v1 complete abort, no tagged field set",
		hex:  "000100000000000003e800070000271005010000018bcfe569f40000018bcfe5680000",
		v: Value{Version: 1, ProducerID: 1000, PrevProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1,
			ProducerEpoch: 7, TimeoutMs: 10000, Status: CompleteAbort, Partitions: []TopicPartitions{},
			LastUpdateMs: 1700000000500, StartMs: 1700000000000},
	},
	{
		name: "v0 prepare abort of an offsets partition",
		hex:  "00000000000000000001000000000001030000000100125f5f636f6e73756d65725f6f666673657473000000010000002a00000000000000000000000000000000",
		v: Value{Version: 0, ProducerID: 1, PrevProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1,
			ProducerEpoch: 0, TimeoutMs: 1, Status: PrepareAbort,
			Partitions: []TopicPartitions{{"__consumer_offsets", []int32{42}}}},
	},
}

func TestValueGolden(t *testing.T) {
	for _, g := range goldenValues {
		t.Run(g.name, func(t *testing.T) {
			want, err := hex.DecodeString(g.hex)
			if err != nil {
				t.Fatal(err)
			}
			if got := EncodeValue(&g.v); !bytes.Equal(got, want) {
				t.Errorf("encode:\n got %x\nwant %x", got, want)
			}
			got, err := DecodeValue(want)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, g.v) {
				t.Errorf("decode:\n got %+v\nwant %+v", got, g.v)
			}
		})
	}
}

func TestKeyGolden(t *testing.T) {
	for _, g := range []struct{ id, hex string }{
		{"t1", "000000027431"},
		{"tx-é€", "0000000874782dc3a9e282ac"},
	} {
		want, _ := hex.DecodeString(g.hex)
		if got := EncodeKey(g.id); !bytes.Equal(got, want) {
			t.Errorf("EncodeKey(%q) = %x, want %x", g.id, got, want)
		}
		id, err := DecodeKey(want)
		if err != nil || id != g.id {
			t.Errorf("DecodeKey(%x) = %q, %v", want, id, err)
		}
	}
}

// A record written by the coordinator encodes at the cluster's level and
// reads back as the state it holds.
func TestRecordOfTransition(t *testing.T) {
	tx := &txn{id: "t", pending: noState, fields: fields{
		producerID: 9, prevProducerID: 8, nextProducerID: -1, epoch: 4, lastEpoch: 3, timeoutMs: 100,
		state: Ongoing, parts: toSet([]TopicPartition{{"b", 2}, {"a", 7}, {"b", 0}}), startMs: 5, updateMs: 6, version: V2,
	}}
	for _, level := range []Version{V0, V1, V2} {
		v := tx.record(&tx.fields, level)
		got, err := DecodeValue(EncodeValue(v))
		if err != nil {
			t.Fatal(err)
		}
		want := []TopicPartitions{{"a", []int32{7}}, {"b", []int32{0, 2}}}
		if !reflect.DeepEqual(got.Partitions, want) {
			t.Errorf("level %d: partitions %v, want %v (grouped and sorted)", level, got.Partitions, want)
		}
		f := fromValue(&got)
		if level == V0 {
			// Version 0 cannot carry the tagged fields.
			if f.prevProducerID != -1 || f.version != V0 {
				t.Errorf("level 0 kept tagged fields: %+v", f)
			}
			continue
		}
		if f.producerID != 9 || f.prevProducerID != 8 || f.epoch != 4 || f.lastEpoch != NoProducerEpoch ||
			f.version != V2 || len(f.parts) != 3 || f.state != Ongoing || f.startMs != 5 || f.updateMs != 6 {
			t.Errorf("level %d: read back %+v", level, f)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := hex.DecodeString(goldenValues[3].hex)
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"unknown version", append([]byte{0, 2}, good[2:]...), ErrUnknownValueVersion},
		{"negative version", append([]byte{0xff, 0xff}, good[2:]...), ErrUnknownValueVersion},
		{"truncated", good[:len(good)-3], ErrCorrupt},
		{"bad status", func() []byte { b := bytes.Clone(good); b[16] = 8; return b }(), ErrCorrupt},
		{"huge partition count", func() []byte {
			b := bytes.Clone(good[:17])
			return append(b, 0xff, 0xff, 0xff, 0x7f)
		}(), ErrCorrupt},
		{"tagged int64 of the wrong size", append(bytes.Clone(good[:len(good)-15]), 1, 0, 2, 0, 1), ErrCorrupt},
	}
	for _, tc := range tests {
		if _, err := DecodeValue(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := DecodeKey([]byte{0, 1, 0, 1, 'x'}); !errors.Is(err, ErrUnknownKeyVersion) {
		t.Errorf("key version 1: %v", err)
	}
	if _, err := DecodeKey([]byte{0, 0, 0xff, 0xff}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("null key string: %v", err)
	}
	if _, err := DecodeKey([]byte{0, 0, 0, 9, 'x'}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("short key: %v", err)
	}
}

// Unknown tagged fields (a newer Kafka's) are skipped; trailing bytes are
// ignored, as Kafka's readers do.
func TestDecodeTolerates(t *testing.T) {
	good, _ := hex.DecodeString(goldenValues[3].hex)
	// Replace the tag section (2 tags) with 3: the two plus tag 9.
	body := good[:len(good)-len("02000800000000000003e802020002")/2]
	b := append(bytes.Clone(body), 3, 0, 8, 0, 0, 0, 0, 0, 0, 3, 0xe8, 2, 2, 0, 2, 9, 3, 1, 2, 3)
	v, err := DecodeValue(b)
	if err != nil || !reflect.DeepEqual(v, goldenValues[3].v) {
		t.Fatalf("unknown tag: %+v, %v", v, err)
	}
	v, err = DecodeValue(append(bytes.Clone(good), 0xde, 0xad))
	if err != nil || !reflect.DeepEqual(v, goldenValues[3].v) {
		t.Fatalf("trailing bytes: %+v, %v", v, err)
	}
}

func TestPartitionFor(t *testing.T) {
	// Apache Kafka 4.3's Utils.abs("...".hashCode()) % 50.
	for _, tc := range []struct {
		id   string
		want int32
	}{
		{"t1", 45},
		{"tx-é€😀", 33},
		{"my-transactional-id-for-the-streams-app-0_1", 1},
		// hashCode is math.MinInt32, whose absolute value Kafka takes
		// as 0.
		{"polygenelubricants", 0},
	} {
		if got := PartitionFor(tc.id, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
	if javaHashCode("polygenelubricants") != math.MinInt32 {
		t.Error("hash of the MinInt32 case changed")
	}
	if PartitionFor("x", 0) != 0 {
		t.Error("no partitions")
	}
}

func TestCompilePattern(t *testing.T) {
	re, err := CompilePattern("a|ab")
	if err != nil {
		t.Fatal(err)
	}
	if !re.MatchString("ab") || re.MatchString("abc") {
		t.Error("pattern does not match whole ids")
	}
	if _, err := CompilePattern("a)|(b"); err == nil {
		t.Error("unbalanced pattern accepted after anchoring")
	}
}
