package group

import (
	"context"
	"fmt"
	"testing"
)

// discardStore accepts and forgets every record, so benchmarks measure the
// coordinator rather than a growing in-memory log.
type discardStore struct{}

func (discardStore) Append(context.Context, string, []Record) error   { return nil }
func (discardStore) Replay(context.Context, func(Record) error) error { return nil }

func benchHarness(b *testing.B) *harness {
	h := &harness{t: b, clock: NewManualClock(testStart), topics: NewMemTopics()}
	h.cfg = Config{Clock: h.clock, Store: discardStore{}, Topics: h.topics, Shards: 1, NoInitialRebalanceDelay: true}
	c, err := New(h.cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	h.c = c
	return h
}

// BenchmarkConsumerHeartbeat measures a steady-state KIP-848 heartbeat in
// a settled group of 50 members.
func BenchmarkConsumerHeartbeat(b *testing.B) {
	h := benchHarness(b)
	h.topics.Set(TopicInfo{Name: "t", ID: tid(1), Partitions: 200})
	var ms []*cgMember
	for i := range 50 {
		m := h.newCGMember("cg", fmt.Sprintf("m%02d", i), "t")
		m.beat()
		ms = append(ms, m)
	}
	for range 5 {
		for _, m := range ms {
			m.beat()
		}
	}
	m := ms[7]
	req := m.request(m.epoch)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.c.ConsumerGroupHeartbeat(ctxb, Client{ID: "c"}, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOffsetCommit measures committing 10 partitions for a member of
// a stable classic group.
func BenchmarkOffsetCommit(b *testing.B) {
	h := benchHarness(b)
	h.topics.Set(TopicInfo{Name: "t", ID: tid(1), Partitions: 10})
	r, _ := h.c.JoinGroup(ctxb, Client{ID: "c"}, joinReq("g", "", "t"))
	r, _ = h.c.JoinGroup(ctxb, Client{ID: "c"}, joinReq("g", r.MemberID, "t"))
	if _, err := h.c.SyncGroup(ctxb, syncReq("g", r.MemberID, r.Generation, nil)); err != nil {
		b.Fatal(err)
	}
	offsets := map[int32]int64{}
	for p := range int32(10) {
		offsets[p] = 100
	}
	req := commitReq("g", r.MemberID, r.Generation, "t", offsets)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := h.c.OffsetCommit(ctxb, req)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatal(err, resp)
		}
	}
}
