package client

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
)

// FuzzDecodeAcquired feeds arbitrary record bytes and acquired ranges to
// the ShareFetch decoder: it must not panic, and every record it returns
// must lie in an acquired range.
func FuzzDecodeAcquired(f *testing.F) {
	b := records.NewBuilder(records.None, 1<<20, 1)
	for _, v := range []string{"a", "b", "c"} {
		b.TryAppend(0, nil, []byte(v), nil)
	}
	raw, _, err := b.Build(nil, records.NoProducer, records.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw, int64(0), int64(2), int16(1))
	f.Add(raw, int64(1), int64(1), int16(3))
	f.Add(raw[:20], int64(0), int64(0), int16(1))
	f.Add([]byte{}, int64(-5), int64(5), int16(0))
	f.Fuzz(func(t *testing.T, data []byte, first, last int64, count int16) {
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Records = data
		rp.AcquiredRecords = []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{{FirstOffset: first, LastOffset: last, DeliveryCount: count}}
		recs, _ := decodeAcquired("t", &rp)
		for _, r := range recs {
			if r.Offset < first || r.Offset > last || r.DeliveryCount != count {
				t.Fatalf("record at %d (count %d) outside acquired %d-%d", r.Offset, r.DeliveryCount, first, last)
			}
		}
	})
}

// FuzzParseShareConfig: any property map either parses or fails with a
// ConfigError, and a parsed config keeps max.poll.records positive.
func FuzzParseShareConfig(f *testing.F) {
	f.Add("share.acquire.mode", "record_limit", "max.poll.records", "10")
	f.Add("share.acknowledgement.mode", "explicit", "fetch.max.wait.ms", "-1")
	f.Add("nope", "x", "max.poll.records", "0")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		props := map[string]string{"bootstrap.servers": "h:1", "group.id": "g", k1: v1, k2: v2}
		c, err := parseShareConfig(props)
		if err != nil {
			if _, ok := err.(*ConfigError); !ok {
				t.Fatalf("error %T %v is not a ConfigError", err, err)
			}
			return
		}
		if c.maxPollRecords < 1 || c.groupID == "" {
			t.Fatalf("accepted config %+v", c)
		}
	})
}

// shareTestBatch is an uncompressed batch of values at offsets from base.
func shareTestBatch(t *testing.T, base int64, values ...string) []byte {
	t.Helper()
	b := records.NewBuilder(records.None, 1<<20, 1)
	for _, v := range values {
		b.TryAppend(0, nil, []byte(v), nil)
	}
	raw, _, err := b.Build(nil, records.NoProducer, records.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Clone(raw)
	binary.BigEndian.PutUint64(raw, uint64(base))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// TestDecodeAcquired: only acquired offsets come out, with their delivery
// counts, and a malformed batch gives none of its records (the ones
// before it still come out, with the error).
func TestDecodeAcquired(t *testing.T) {
	first := shareTestBatch(t, 10, "a", "b", "c", "d")
	second := shareTestBatch(t, 14, "e", "f")
	bad := bytes.Clone(second)
	bad[len(bad)-8] = 126 // the length of the last record (8 bytes), far past the end
	binary.BigEndian.PutUint32(bad[17:], crc32.Checksum(bad[21:], crc32.MakeTable(crc32.Castagnoli)))
	type ar = kmsg.ShareFetchResponseTopicPartitionAcquiredRecord
	for _, tc := range []struct {
		name     string
		set      []byte
		acquired []ar
		values   string
		counts   []int16
		fails    bool
	}{
		{"a slice of a batch", first, []ar{{FirstOffset: 11, LastOffset: 12, DeliveryCount: 1}}, "bc", []int16{1, 1}, false},
		{"two ranges over two batches", append(bytes.Clone(first), second...),
			[]ar{{FirstOffset: 10, LastOffset: 10, DeliveryCount: 2}, {FirstOffset: 13, LastOffset: 15, DeliveryCount: 1}}, "adef", []int16{2, 1, 1, 1}, false},
		{"malformed second batch", append(bytes.Clone(first), bad...), []ar{{FirstOffset: 10, LastOffset: 15, DeliveryCount: 1}}, "abcd", []int16{1, 1, 1, 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Records, rp.AcquiredRecords = tc.set, tc.acquired
			recs, err := decodeAcquired("t", &rp)
			if (err != nil) != tc.fails {
				t.Fatalf("error %v, want failure %v", err, tc.fails)
			}
			var values string
			var counts []int16
			for _, r := range recs {
				values += string(r.Value)
				counts = append(counts, r.DeliveryCount)
			}
			if values != tc.values || !slices.Equal(counts, tc.counts) {
				t.Fatalf("values %q counts %v, want %q %v", values, counts, tc.values, tc.counts)
			}
		})
	}
}
