package client

import (
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
