package group

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommitReq(group, member string, gen int32, pid int64, topic string, offsets map[int32]int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 4
	r.TransactionalID = "tx"
	r.Group = group
	r.ProducerID = pid
	r.ProducerEpoch = 0
	r.MemberID = member
	r.Generation = gen
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = p, o, 3
		rp.Metadata = kmsg.StringPtr("m")
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = []kmsg.TxnOffsetCommitRequestTopic{rt}
	return r
}

func (h *harness) txnCommit(req *kmsg.TxnOffsetCommitRequest) []int16 {
	h.t.Helper()
	resp, err := h.c.TxnOffsetCommit(ctxb, req)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []int16
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, p.ErrorCode)
		}
	}
	return out
}

// stableFetch is OffsetFetch v7 with RequireStable: offset per partition,
// or the negated error code.
func (h *harness) stableFetch(group, topic string, partitions ...int32) map[int32]int64 {
	h.t.Helper()
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = group
	r.RequireStable = true
	if topic != "" {
		r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: partitions}}
	}
	resp, err := h.c.OffsetFetch(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				out[p.Partition] = -int64(p.ErrorCode)
				continue
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

func (h *harness) complete(partition int32, pid int64, commit bool) {
	h.t.Helper()
	h.store.AppendMarker(partition, pid, commit)
	if err := h.c.CompleteTransaction(ctxb, partition, pid, commit); err != nil {
		h.t.Fatal(err)
	}
}

const unstable = -int64(88) // UNSTABLE_OFFSET_COMMIT, as stableFetch reports it

// Offsets committed in a transaction are invisible (and unstable for
// RequireStable fetches) until the COMMIT marker; an ABORT drops them.
func TestTxnOffsetsCommitAndAbort(t *testing.T) {
	if kerr.UnstableOffsetCommit.Code != int16(-unstable) {
		t.Fatal("UNSTABLE_OFFSET_COMMIT's code changed")
	}
	h := newHarness(t)
	h.addTopic("t", 1, 4)
	allCodes(t, "txn commit", h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 10, 1: 11})), 0)

	if got := h.fetch("g", "t", 0, 1, 2); got[0] != -1 || got[1] != -1 {
		t.Fatalf("pending offsets visible: %v", got)
	}
	if got := h.stableFetch("g", "t", 0, 1, 2); got[0] != unstable || got[1] != unstable || got[2] != -1 {
		t.Fatalf("require stable: %v", got)
	}
	h.complete(0, 7, true)
	if got := h.stableFetch("g", "t", 0, 1); got[0] != 10 || got[1] != 11 {
		t.Fatalf("after commit: %v", got)
	}

	allCodes(t, "second txn", h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 20})), 0)
	if got := h.stableFetch("g", "", 0); got[0] != unstable || got[1] != 11 {
		t.Fatalf("fetch all while pending: %v", got)
	}
	h.complete(0, 7, false)
	if got := h.stableFetch("g", "t", 0, 1); got[0] != 10 || got[1] != 11 {
		t.Fatalf("after abort: %v", got)
	}
	// A repeated marker changes nothing.
	h.complete(0, 7, true)
	if got := h.fetch("g", "t", 0); got[0] != 10 {
		t.Fatalf("after repeated marker: %v", got)
	}
}

// The latest written offset wins: a plain commit written after the
// transactional one survives the transaction's commit; one written before
// does not.
func TestTxnOffsetsOrderWithPlainCommits(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 10}))
	allCodes(t, "plain", commitCodes(h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 15, 1: 5}))), 0)
	h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{1: 50}))
	h.complete(0, 7, true)
	if got := h.fetch("g", "t", 0, 1); got[0] != 15 || got[1] != 50 {
		t.Fatalf("fetched %v, want 0:15 (plain commit after) 1:50 (txn after plain)", got)
	}
	// The same after a restart: replay follows the log's order.
	h.restart()
	if got := h.fetch("g", "t", 0, 1); got[0] != 15 || got[1] != 50 {
		t.Fatalf("after restart %v", got)
	}
}

// Replay rebuilds pending offsets from transactional records and resolves
// them with the markers that follow, per __consumer_offsets partition.
func TestTxnOffsetsReplay(t *testing.T) {
	// Groups "a*" live in partition 0, the others in partition 1.
	part := func(g string) int32 {
		if strings.HasPrefix(g, "a") {
			return 0
		}
		return 1
	}
	h := newHarness(t, func(c *Config) { c.PartitionOf = part })
	h.addTopic("t", 1, 2)
	h.txnCommit(txnCommitReq("a1", "", -1, 7, "t", map[int32]int64{0: 10}))
	h.txnCommit(txnCommitReq("b1", "", -1, 7, "t", map[int32]int64{0: 20}))
	h.txnCommit(txnCommitReq("b2", "", -1, 8, "t", map[int32]int64{0: 30}))

	h.restart()
	for _, g := range []string{"a1", "b1", "b2"} {
		if got := h.stableFetch(g, "t", 0); got[0] != unstable {
			t.Fatalf("%s after restart: %v", g, got)
		}
	}
	// Producer 7's marker reaches partition 0 only: a1 commits, b1 waits.
	h.complete(0, 7, true)
	if a, b := h.stableFetch("a1", "t", 0), h.stableFetch("b1", "t", 0); a[0] != 10 || b[0] != unstable {
		t.Fatalf("partition 0 marker: a1 %v b1 %v", a, b)
	}
	h.store.AppendMarker(1, 7, true)
	h.store.AppendMarker(1, 8, false)
	h.restart()
	got := []int64{h.stableFetch("a1", "t", 0)[0], h.stableFetch("b1", "t", 0)[0], h.stableFetch("b2", "t", 0)[0]}
	if got[0] != 10 || got[1] != 20 || got[2] != -1 {
		t.Fatalf("replayed markers: %v, want [10 20 -1]", got)
	}
	// A compacted log keeps the outcome: the aborted record is dropped,
	// not taken as the partition's latest value.
	h.commit(commitReq("b2", "", -1, "t", map[int32]int64{1: 40}))
	h.txnCommit(txnCommitReq("b2", "", -1, 9, "t", map[int32]int64{1: 41}))
	h.complete(1, 9, false)
	h.c.Close()
	h.store.Compact()
	h.start()
	if got := h.fetch("b2", "t", 1); got[1] != 40 {
		t.Fatalf("after compaction: %v", got)
	}
}

func TestTxnOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.OffsetMetadataMaxBytes = 4 })
	h.addTopic("t", 1, 2)

	expectCode(t, "unknown group with a generation", h.txnCommit(txnCommitReq("nope", "m", 1, 7, "t", map[int32]int64{0: 1}))[0], kerr.IllegalGeneration.Code)
	r := txnCommitReq("", "", -1, 7, "t", map[int32]int64{0: 1})
	expectCode(t, "empty group id", h.txnCommit(r)[0], kerr.InvalidGroupID.Code)
	r = txnCommitReq("g", "", -1, 7, "missing", map[int32]int64{0: 1})
	expectCode(t, "unknown topic", h.txnCommit(r)[0], kerr.UnknownTopicOrPartition.Code)
	r = txnCommitReq("g", "", -1, 7, "t", map[int32]int64{5: 1})
	expectCode(t, "unknown partition", h.txnCommit(r)[0], kerr.UnknownTopicOrPartition.Code)
	r = txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 1})
	r.Topics[0].Partitions[0].Metadata = kmsg.StringPtr("too long")
	expectCode(t, "metadata too large", h.txnCommit(r)[0], kerr.OffsetMetadataTooLarge.Code)

	// A classic group mid-rebalance: a member with its generation may
	// commit (unlike a plain commit), a wrong generation may not; a commit
	// without member id and generation is accepted whatever the state.
	m1, jr := h.joinNew("cg", "t")
	gen := jr.Generation
	expectCode(t, "member, completing rebalance", h.txnCommit(txnCommitReq("cg", m1, gen, 7, "t", map[int32]int64{0: 1}))[0], 0)
	expectCode(t, "plain commit, completing rebalance", commitCodes(h.commit(commitReq("cg", m1, gen, "t", map[int32]int64{0: 1})))[0], kerr.RebalanceInProgress.Code)
	expectCode(t, "wrong generation", h.txnCommit(txnCommitReq("cg", m1, gen+1, 7, "t", map[int32]int64{0: 1}))[0], kerr.IllegalGeneration.Code)
	expectCode(t, "unknown member", h.txnCommit(txnCommitReq("cg", "ghost", gen, 7, "t", map[int32]int64{0: 1}))[0], kerr.UnknownMemberID.Code)
	expectCode(t, "no member, no generation", h.txnCommit(txnCommitReq("cg", "", -1, 7, "t", map[int32]int64{0: 1}))[0], 0)
	r = txnCommitReq("cg", "", -1, 7, "t", map[int32]int64{0: 1})
	r.InstanceID = kmsg.StringPtr("not-a-member")
	expectCode(t, "unknown static member", h.txnCommit(r)[0], kerr.UnknownMemberID.Code)
}

// Consumer-protocol groups: the member epoch is checked, ILLEGAL_GENERATION
// for any stale epoch (the code TxnOffsetCommit clients expect); an older
// epoch still commits partitions held since then (KIP-1251), and one
// partition it did not hold fails the whole request.
func TestTxnOffsetCommitConsumerGroup(t *testing.T) {
	h, m1, m2 := twoMembers(t)
	p1 := partitionsOf(m1, tid(1))
	commit := func(m *cgMember, epoch int32, ps ...int32) []int16 {
		offs := map[int32]int64{}
		for _, p := range ps {
			offs[p] = 100
		}
		return h.txnCommit(txnCommitReq("cg", m.id, epoch, 7, "t", offs))
	}
	allCodes(t, "current epoch", commit(m1, m1.epoch, p1[0]), 0)
	allCodes(t, "epoch ahead", commit(m1, m1.epoch+1, p1[0]), kerr.IllegalGeneration.Code)
	allCodes(t, "unknown member", commit(&cgMember{id: "ghost"}, 1, p1[0]), kerr.UnknownMemberID.Code)
	allCodes(t, "producer without group metadata", commit(&cgMember{id: ""}, -1, p1[0]), 0)

	old := m1.epoch
	m3 := h.newCGMember("cg", "m3", "t")
	m3.mustBeat()
	converge(t, h, "cg", m1, m2, m3)
	kept := partitionsOf(m1, tid(1))
	allCodes(t, "old epoch, partition held since", commit(m1, old, kept[0]), 0)
	got := partitionsOf(m3, tid(1))
	allCodes(t, "old epoch, one partition not held", commit(m1, old, kept[0], got[0]), kerr.IllegalGeneration.Code)
}

// Pending offsets hold off expiry; OffsetDelete and DeleteGroups remove
// them with the committed ones.
func TestTxnOffsetsExpiryAndDeletion(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.OffsetsRetention = time.Hour
		c.OffsetsRetentionCheckInterval = time.Minute
	})
	h.addTopic("t", 1, 2)
	h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 5, 1: 6}))
	h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 10}))
	h.advance(2 * time.Hour)
	// The check that fired during the jump may have run on the shard
	// before the clock reached its target, and rescheduled itself for a
	// minute after that: a zero advance fires it at the new time.
	h.advance(0)
	if got := h.fetch("g", "t", 0, 1); got[0] != 5 || got[1] != -1 {
		t.Fatalf("after expiry %v: partition 0 has a transaction open and stays", got)
	}
	h.complete(0, 7, true)
	if got := h.fetch("g", "t", 0); got[0] != 10 {
		t.Fatalf("after commit %v", got)
	}

	h.txnCommit(txnCommitReq("g", "", -1, 8, "t", map[int32]int64{1: 60}))
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 1}}}}
	if _, err := h.c.OffsetDelete(ctxb, del); err != nil {
		t.Fatal(err)
	}
	if got := h.stableFetch("g", "t", 1); got[1] != -1 {
		t.Fatalf("after OffsetDelete %v", got)
	}
	h.complete(0, 8, true)
	if got := h.fetch("g", "t", 1); got[1] != -1 {
		t.Fatalf("deleted pending offset came back: %v", got)
	}

	h.txnCommit(txnCommitReq("g2", "", -1, 9, "t", map[int32]int64{1: 70}))
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"g2"}
	resp, err := h.c.DeleteGroups(ctxb, dg)
	if err != nil || resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete group: %+v %v", resp, err)
	}
	// The id is used again before the old transaction ends.
	h.commit(commitReq("g2", "", -1, "t", map[int32]int64{0: 1}))
	h.complete(0, 9, true)
	if got := h.fetch("g2", "t", 1); got[1] != -1 {
		t.Fatalf("deleted group's pending offset came back: %v", got)
	}
	h.restart()
	if got := h.fetch("g2", "t", 1); got[1] != -1 {
		t.Fatalf("after restart: %v", got)
	}
}

func TestTxnOffsetCommitFailures(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 1)
	h.store.FailAppends(kerr.NotEnoughReplicas)
	allCodes(t, "append fails", h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 1})), kerr.CoordinatorNotAvailable.Code)
	h.store.FailAppends(kerr.InvalidProducerEpoch)
	allCodes(t, "fenced producer", h.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 1})), kerr.InvalidProducerEpoch.Code)
	h.store.FailAppends(nil)
	if got := h.stableFetch("g", "t", 0); got[0] != -1 {
		t.Fatalf("a failed commit left something pending: %v", got)
	}

	// A store that cannot write transactional batches.
	h2 := newHarness(t, func(c *Config) { c.Store = plainStore{NewMemStore()} })
	h2.addTopic("t", 1, 1)
	allCodes(t, "no TxnStore", h2.txnCommit(txnCommitReq("g", "", -1, 7, "t", map[int32]int64{0: 1})), kerr.CoordinatorNotAvailable.Code)
}

// plainStore hides MemStore's AppendTxn.
type plainStore struct{ s *MemStore }

func (p plainStore) Append(ctx context.Context, g string, recs []Record) error {
	return p.s.Append(ctx, g, recs)
}

func (p plainStore) Replay(ctx context.Context, fn func(Record) error) error {
	return p.s.Replay(ctx, fn)
}
