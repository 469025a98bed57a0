package franzgo

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	ct "weir/test/compat/internal/compattest"
)

// TestOffsetsByTimeAndSeek writes ten records one second apart in CreateTime
// and checks every ListOffsets flavour and consumer positioning against them.
func TestOffsetsByTimeAndSeek(t *testing.T) {
	const n = 10
	adm := ct.Admin(t)
	topic := ct.Topic(t, adm, "offsets", 1, nil)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }

	prod := ct.Client(t, kgo.DefaultProduceTopic(topic))
	for i := 0; i < n; i++ {
		r := ct.Record(topic, i)
		r.Timestamp = at(i)
		if err := prod.ProduceSync(ct.Ctx(t, 15*time.Second), r).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}

	ctx := ct.Ctx(t, 30*time.Second)
	offsetOf := func(what string, l kadm.ListedOffsets, err error) int64 {
		t.Helper()
		if err == nil {
			err = l.Error()
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		o, ok := l.Lookup(topic, 0)
		if !ok {
			t.Fatalf("%s: partition 0 not listed", what)
		}
		return o.Offset
	}
	for _, tc := range []struct {
		what string
		list func() (kadm.ListedOffsets, error)
		want int64
	}{
		{"start", func() (kadm.ListedOffsets, error) { return adm.ListStartOffsets(ctx, topic) }, 0},
		{"end", func() (kadm.ListedOffsets, error) { return adm.ListEndOffsets(ctx, topic) }, n},
		{"max timestamp", func() (kadm.ListedOffsets, error) { return adm.ListMaxTimestampOffsets(ctx, topic) }, n - 1},
		{"before all", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, at(-5).UnixMilli(), topic) }, 0},
		{"exact record 4", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, at(4).UnixMilli(), topic) }, 4},
		{"between 3 and 4", func() (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, at(3).UnixMilli()+500, topic)
		}, 4},
		{"after all", func() (kadm.ListedOffsets, error) { return adm.ListOffsetsAfterMilli(ctx, at(n+5).UnixMilli(), topic) }, n},
	} {
		l, err := tc.list()
		if got := offsetOf(tc.what, l, err); got != tc.want {
			t.Errorf("ListOffsets %s = %d, want %d", tc.what, got, tc.want)
		}
	}

	// A consumer reset to a time starts at the first record at or after it.
	first := ct.ReadAll(t, topic, 1, 30*time.Second,
		kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(at(6).UnixMilli()-1)))
	if i, err := ct.Check(first[0]); err != nil || i != 6 || first[0].Offset != 6 {
		t.Errorf("consumer reset after record 5's time starts at index %d offset %d (%v), want 6", i, first[0].Offset, err)
	}
	if !first[0].Timestamp.Equal(at(6)) {
		t.Errorf("record 6 timestamp %v, want %v (CreateTime kept)", first[0].Timestamp, at(6))
	}

	// Seek: a consumer reads offset 0, then is moved to offset 8, then back to 2.
	cl := ct.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		topic: {0: kgo.NewOffset().AtStart()},
	}))
	if got := pollOne(t, cl); got != 0 {
		t.Fatalf("first poll at offset %d, want 0", got)
	}
	for _, seek := range []int64{8, 2} {
		cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: seek}}})
		if got := pollOne(t, cl); got != seek {
			t.Errorf("after seek to %d the next record is at offset %d", seek, got)
		}
	}
}

// pollOne polls a single record and returns its offset after checking its content.
func pollOne(t *testing.T, cl *kgo.Client) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	fs := cl.PollRecords(ctx, 1)
	fs.EachError(func(topic string, p int32, err error) {
		t.Fatalf("fetch %s/%d: %v", topic, p, err)
	})
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("poll returned %d records, want 1", len(recs))
	}
	r := recs[0]
	if i, err := ct.Check(r); err != nil || int64(i) != r.Offset {
		t.Errorf("record at offset %d has index %d (%v)", r.Offset, i, err)
	}
	return r.Offset
}
