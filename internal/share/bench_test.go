package share

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkAcquireAck hands out 500-record batches and accepts them, the
// steady state of a share consumer with max.poll.records=500: one
// Acquire and one Acknowledge per iteration, each moving the SPSO by 500.
func BenchmarkAcquireAck(b *testing.B) {
	for _, mode := range []AcquireMode{BatchOptimized, RecordLimit} {
		for _, batchLen := range []int64{1, 100, 500} {
			b.Run(fmt.Sprintf("%s/log-batches-of-%d", mode, batchLen), func(b *testing.B) {
				p := New(Config{}, 0)
				now := testStart
				// A log window of 500 records in batches of batchLen,
				// shifted by 500 each iteration.
				batches := make([]Batch, 0, 500/batchLen)
				for base := int64(0); base < 500; base += batchLen {
					batches = append(batches, Batch{Base: base, Last: base + batchLen - 1})
				}
				acks := []AckBatch{{Types: []AckType{AckAccept}}}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					shift := int64(i) * 500
					for j := range batches {
						batches[j].Base = shift + int64(j)*batchLen
						batches[j].Last = batches[j].Base + batchLen - 1
					}
					res, err := p.Acquire(AcquireRequest{
						Member:        "m",
						FetchOffset:   shift,
						Batches:       batches,
						HighWatermark: shift + 500,
						MaxRecords:    500,
						BatchSize:     500,
						Mode:          mode,
					}, now)
					if err != nil || res.Records != 500 {
						b.Fatalf("acquired %d: %v", res.Records, err)
					}
					acks[0].First, acks[0].Last = shift, shift+499
					if _, err := p.Acknowledge("m", acks, now); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAcknowledgePerOffset accepts a 500-record acquisition with
// per-offset types alternating accept and release (the worst case for the
// run list), then re-acquires the released half.
func BenchmarkAcknowledgePerOffset(b *testing.B) {
	p := New(Config{}, 0)
	now := testStart
	types := make([]AckType, 500)
	for i := range types {
		types[i] = AckAccept
		if i%2 == 1 {
			types[i] = AckRelease
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		shift := int64(i) * 500
		res, err := p.Acquire(AcquireRequest{
			Member: "m", FetchOffset: p.NextFetchOffset(now),
			Batches:       []Batch{{Base: shift, Last: shift + 499}},
			HighWatermark: shift + 500, MaxRecords: 500, BatchSize: 500,
		}, now)
		if err != nil {
			b.Fatal(err)
		}
		_ = res
		if _, err := p.Acknowledge("m", []AckBatch{{First: shift, Last: shift + 499, Types: types}}, now); err != nil {
			b.Fatal(err)
		}
		// Take the released half back and accept it.
		res, err = p.Acquire(AcquireRequest{
			Member: "m", FetchOffset: p.NextFetchOffset(now),
			Batches:       []Batch{{Base: shift, Last: shift + 499}},
			HighWatermark: shift + 500, MaxRecords: 500, BatchSize: 500,
		}, now)
		if err != nil || res.Records != 250 {
			b.Fatalf("re-acquired %d: %v", res.Records, err)
		}
		acks := make([]AckBatch, 0, len(res.Acquired))
		for _, r := range res.Acquired {
			acks = append(acks, AckBatch{First: r.First, Last: r.Last, Types: []AckType{AckAccept}})
		}
		if _, err := p.Acknowledge("m", acks, now); err != nil {
			b.Fatal(err)
		}
		if p.InFlight() != 0 {
			b.Fatalf("in flight %d", p.InFlight())
		}
		now = now.Add(time.Millisecond)
	}
}

// BenchmarkEncodeDelta measures encoding the durable record of one
// 500-record acquisition.
func BenchmarkEncodeDelta(b *testing.B) {
	rec := StateRecord{Kind: Delta, StartOffset: 1 << 30, Batches: []StateBatch{{First: 1 << 30, Last: 1<<30 + 499, State: Acquired, DeliveryCount: 1}}}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = rec.AppendTo(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAssign measures one target assignment of 200 members (the
// group size limit) over a topic of 1000 partitions, from scratch and
// from a stable assignment.
func BenchmarkAssign(b *testing.B) {
	topics := func(string) (TopicInfo, bool) { return TopicInfo{ID: topicID("t", 1), Partitions: 1000}, true }
	members := make([]AssignMember, 200)
	for i := range members {
		members[i] = AssignMember{ID: fmt.Sprintf("member-%03d", i), Topics: []string{"t"}}
	}
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Assign(members, topics)
		}
	})
	first := Assign(members, topics)
	for i := range members {
		members[i].Now = first[members[i].ID]
	}
	b.Run("stable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Assign(members, topics)
		}
	})
}
