package coordinator

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/txn"
)

// A transaction end to end: the producer is answered once each record is
// committed, the markers reach every partition's leader (one request per
// node), and CompleteCommit is written after the last one.
func TestCommitWritesRecordsAndMarkers(t *testing.T) {
	e := newEnv(t, 3, nil)
	e.loadAll(4)
	e.h.with(func(h *fakeHost) { h.leaders[tp("b", 0)] = 2 })

	r := e.init("t1", 4, 60000)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("init: %+v", r)
	}
	if codes := addCodes(e.add("t1", 1000, 0, 3, tp("a", 0), tp("a", 1), tp("b", 0))); !slices.Equal(codes, []int16{0, 0, 0}) {
		t.Fatalf("add: %v", codes)
	}
	if er := e.end("t1", 1000, 0, true, 3); er.ErrorCode != 0 {
		t.Fatalf("end: %+v", er)
	}
	e.waitState("t1", "CompleteCommit")

	ms := e.h.markers()
	if len(ms) != 3 {
		t.Fatalf("markers %+v", ms)
	}
	for _, m := range ms {
		want := int32(1)
		if m.tp.Topic == "b" {
			want = 2
		}
		if m.node != want || !m.commit || m.pid != 1000 || m.epoch != 0 || m.cepoch != 4 || m.tv != 0 {
			t.Errorf("marker %+v", m)
		}
	}
	if st, err := e.c.Stats(ctx(t)); err != nil || st.Events["txn_committed"] != 1 || st.Events["txn_aborted"] != 0 {
		t.Fatalf("stats %+v %v", st, err)
	}
	i, _ := e.c.PartitionFor("t1")
	got := e.h.replicas[i].records(t)
	want := []string{
		"t1 Empty pid=1000 epoch=0",
		"t1 Ongoing pid=1000 epoch=0",
		"t1 PrepareCommit pid=1000 epoch=0",
		"t1 CompleteCommit pid=1000 epoch=0",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("log:\n%v\nwant\n%v", got, want)
	}
}

// Under transaction version 2 (EndTxn v5) the answer carries the bumped
// epoch and the markers carry it too, with the transaction version.
func TestEndTxnV5BumpsEpoch(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 5, 60000)
	// The partition leader's implicit add (AddPartitionsToTxn v5).
	if code := e.leaderAdd("t", 1000, 0, tp("a", 0)); code != 0 {
		t.Fatalf("implicit add: %v", kerr.ErrorForCode(code))
	}
	er := e.end("t", 1000, 0, true, 5)
	if er.ErrorCode != 0 || er.ProducerID != 1000 || er.ProducerEpoch != 1 {
		t.Fatalf("end: %+v", er)
	}
	e.waitState("t", "CompleteCommit")
	if ms := e.h.markers(); len(ms) != 1 || ms[0].epoch != 1 || ms[0].tv != 2 {
		t.Fatalf("markers %+v", ms)
	}
}

func TestNotCoordinatorAndLoading(t *testing.T) {
	e := newEnv(t, 2, nil)
	if r := e.init("t1", 4, 1000); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("before load: %+v", r)
	}
	// Hold the load: the replica says it leads, but the log cannot be
	// read until the gate opens (Leading blocks the loader here).
	i, _ := e.c.PartitionFor("t1")
	rep := e.h.replicas[i]
	e.h.lead(int(i), 1)
	rep.mu.Lock()
	e.c.Elected(i, 1)
	eventually(t, 5*time.Second, "loading", func() bool {
		st, _ := statsNoWait(e)
		return st.Loading == 1
	})
	done := make(chan *kmsg.InitProducerIDResponse, 1)
	go func() { done <- e.init("t1", 4, 1000) }()
	r := <-done
	rep.mu.Unlock()
	if r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("while loading: %+v", r)
	}
	eventually(t, 5*time.Second, "loaded", func() bool { return e.init("t1", 4, 1000).ErrorCode == 0 })
	e.h.replicas[i].set(func(r *fakeReplica) { r.leading = false })
	e.c.LeadershipChanged()
	eventually(t, 5*time.Second, "unloaded", func() bool { return e.init("t1", 4, 1000).ErrorCode == kerr.NotCoordinator.Code })
}

// statsNoWait reads the counters without a caller context of its own.
func statsNoWait(e *env) (Stats, error) { return e.c.Stats(context.Background()) }

func TestRequestChecksBeforeRouting(t *testing.T) {
	e := newEnv(t, 1, func(c *Config) { c.MaxTimeout = time.Minute })
	// Not loaded anywhere, yet bad input is answered first.
	if r := e.init("", 4, 1000); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("empty id: %+v", r)
	}
	if r := e.init("t", 4, 60001); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Fatalf("timeout: %+v", r)
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	req.ProducerID = 5
	r, _ := e.c.InitProducerID(ctx(t), req)
	if r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("producer id without epoch: %+v", r)
	}
	// Idempotent producers get a fresh id from the allocator.
	req = kmsg.NewPtrInitProducerIDRequest()
	r, _ = e.c.InitProducerID(ctx(t), req)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("idempotent: %+v", r)
	}
}

// Clients that predate PRODUCER_FENCED get INVALID_PRODUCER_EPOCH.
func TestOldClientsSeeInvalidProducerEpoch(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.init("t", 4, 60000) // epoch 1 fences epoch 0
	for _, tc := range []struct {
		v    int16
		want int16
	}{{1, kerr.InvalidProducerEpoch.Code}, {2, kerr.ProducerFenced.Code}, {3, kerr.ProducerFenced.Code}} {
		if codes := addCodes(e.add("t", 1000, 0, tc.v, tp("a", 0))); codes[0] != tc.want {
			t.Errorf("AddPartitionsToTxn v%d: %v", tc.v, codes)
		}
		if er := e.end("t", 1000, 0, true, tc.v); er.ErrorCode != tc.want {
			t.Errorf("EndTxn v%d: %d", tc.v, er.ErrorCode)
		}
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	id := "t"
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 60000
	req.ProducerID, req.ProducerEpoch = 1000, 0
	for v, want := range map[int16]int16{3: kerr.InvalidProducerEpoch.Code, 4: kerr.ProducerFenced.Code} {
		req.Version = v
		if r, _ := e.c.InitProducerID(ctx(t), req); r.ErrorCode != want {
			t.Errorf("InitProducerId v%d: %+v", v, r)
		}
	}
}

// A partition that does not exist fails the add: the others are
// OPERATION_NOT_ATTEMPTED, and nothing is added.
func TestAddUnknownPartition(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.h.with(func(h *fakeHost) { h.deleted[tp("gone", 0)] = true })
	codes := addCodes(e.add("t", 1000, 0, 3, tp("a", 0), tp("gone", 0)))
	if !slices.Equal(codes, []int16{kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("codes %v", codes)
	}
	if d := e.describe("t"); d.State != "Empty" {
		t.Fatalf("state %+v", d)
	}
}

// A producer (v0-3) may not add an internal topic's partitions to its
// transaction, with or without an authorizer: they answer
// TOPIC_AUTHORIZATION_FAILED (before the existence check), the rest of
// the add is OPERATION_NOT_ATTEMPTED or UNKNOWN_TOPIC_OR_PARTITION, and
// nothing is added. A partition leader's add (v4+) is not checked so,
// as in Kafka.
func TestAddInternalTopicRefusedFromProducers(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.h.with(func(h *fakeHost) {
		h.deleted[tp("gone", 0)] = true
		h.deleted[tp("__consumer_offsets", 999)] = true
	})
	denied, skipped, unknown := kerr.TopicAuthorizationFailed.Code, kerr.OperationNotAttempted.Code, kerr.UnknownTopicOrPartition.Code
	for _, tc := range []struct {
		name  string
		parts []txn.TopicPartition
		want  []int16
	}{
		{"offsets", []txn.TopicPartition{tp("__consumer_offsets", 0)}, []int16{denied}},
		{"with a topic", []txn.TopicPartition{tp("a", 0), tp("__transaction_state", 1)}, []int16{skipped, denied}},
		{"with a missing topic", []txn.TopicPartition{tp("__share_group_state", 0), tp("gone", 0)}, []int16{denied, unknown}},
		{"missing internal partition", []txn.TopicPartition{tp("__consumer_offsets", 999), tp("a", 1)}, []int16{denied, skipped}},
	} {
		for v := int16(0); v <= 3; v++ {
			if got := addCodes(e.add("t", 1000, 0, v, tc.parts...)); !slices.Equal(got, tc.want) {
				t.Errorf("%s v%d: %v, want %v", tc.name, v, got, tc.want)
			}
		}
	}
	if d := e.describe("t"); d.State != "Empty" || len(d.Topics) != 0 {
		t.Fatalf("refused adds changed the transaction: %+v", d)
	}
	// A topic named like one but not internal is a topic like any other.
	if got := addCodes(e.add("t", 1000, 0, 3, tp("__consumer_offsets_copy", 0))); !slices.Equal(got, []int16{0}) {
		t.Fatalf("look-alike: %v", got)
	}

	e.init("b", 5, 60000) // pid 1001
	if code := e.leaderAdd("b", 1001, 0, tp("__consumer_offsets", 0)); code != 0 {
		t.Fatalf("partition leader's add: %v", kerr.ErrorForCode(code))
	}
	if d := e.describe("b"); d.State != "Ongoing" || len(d.Topics) != 1 || d.Topics[0].Topic != "__consumer_offsets" {
		t.Fatalf("partition leader's add not applied: %+v", d)
	}
}

// v4 batches: verify-only entries answer which partitions are in the
// transaction, without writing.
func TestVerifyOnlyBatch(t *testing.T) {
	e := newEnv(t, 3, nil)
	e.loadAll(0)
	e.init("t1", 4, 60000)
	e.init("t2", 4, 60000) // pid 1001
	e.add("t1", 1000, 0, 3, tp("a", 0))
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	for _, x := range []struct {
		id    string
		pid   int64
		epoch int16
	}{{"t1", 1000, 0}, {"t2", 1001, 0}, {"t2", 1001, 7}, {"nope", 1, 0}} {
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = x.id, x.pid, x.epoch, true
		tr.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{0, 1}}}
		req.Transactions = append(req.Transactions, tr)
	}
	resp, err := e.c.AddPartitionsToTxn(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]int16
	for _, tr := range resp.Transactions {
		var cs []int16
		for _, p := range tr.Topics[0].Partitions {
			cs = append(cs, p.ErrorCode)
		}
		got = append(got, cs)
	}
	abortable, notFound := kerr.TransactionAbortable.Code, kerr.InvalidProducerIDMapping.Code
	want := [][]int16{{0, abortable}, {abortable, abortable}, {kerr.ProducerFenced.Code, kerr.ProducerFenced.Code}, {notFound, notFound}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("verify: %v, want %v", got, want)
	}
	if d := e.describe("t2"); d.State != "Empty" {
		t.Fatalf("verify wrote: %+v", d)
	}
}

// Markers that fail are sent again after retry.backoff.ms to the leader
// the partition has then; the transaction completes only when all landed.
func TestMarkerRetries(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.add("t", 1000, 0, 3, tp("a", 0), tp("b", 0))
	e.h.with(func(h *fakeHost) {
		h.errs[tp("a", 0)] = []int16{kerr.NotLeaderForPartition.Code}
	})
	e.end("t", 1000, 0, false, 3)
	eventually(t, 5*time.Second, "b's marker", func() bool { return len(e.h.markers()) == 1 })
	// a-0 moved to node 3 and waits for its backoff.
	e.h.with(func(h *fakeHost) { h.leaders[tp("a", 0)] = 3 })
	if d := e.describe("t"); d.State != "PrepareAbort" || len(d.Topics) != 1 || d.Topics[0].Topic != "a" {
		t.Fatalf("before retry: %+v", d)
	}
	eventually(t, 5*time.Second, "retry armed", func() bool { return e.clock.Pending() >= 3 })
	e.clock.Advance(100 * time.Millisecond)
	e.waitState("t", "CompleteAbort")
	ms := e.h.markers()
	if len(ms) != 2 || ms[1].tp != tp("a", 0) || ms[1].node != 3 || ms[1].commit {
		t.Fatalf("markers %+v", ms)
	}
}

// A node that cannot be reached: its markers are retried until it can.
func TestMarkerNodeDown(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.add("t", 1000, 0, 3, tp("a", 0))
	e.h.with(func(h *fakeHost) { h.down[1] = true })
	e.end("t", 1000, 0, true, 3)
	eventually(t, 5*time.Second, "first attempt", func() bool {
		var n int
		e.h.with(func(h *fakeHost) { n = h.requests })
		return n == 1
	})
	e.h.with(func(h *fakeHost) { h.down[1] = false })
	eventually(t, 5*time.Second, "retry", func() bool {
		e.clock.Advance(100 * time.Millisecond)
		return e.describe("t").State == "CompleteCommit"
	})
}

// A partition deleted before its marker needs none.
func TestMarkerForDeletedPartition(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.add("t", 1000, 0, 3, tp("a", 0), tp("b", 0))
	e.h.with(func(h *fakeHost) { h.deleted[tp("b", 0)] = true })
	e.end("t", 1000, 0, true, 3)
	e.waitState("t", "CompleteCommit")
	if ms := e.h.markers(); len(ms) != 1 || ms[0].tp != tp("a", 0) {
		t.Fatalf("markers %+v", ms)
	}
}

// Coordinator failover mid-transaction: the first coordinator wrote
// PrepareCommit but its markers never landed; a new coordinator (another
// node, here a new process over the same log at a newer epoch) finds the
// transaction prepared, sends the markers and completes it. An open
// transaction is found open and times out on the new coordinator.
func TestFailoverCompletesPreparedTransactions(t *testing.T) {
	e := newEnv(t, 1, func(c *Config) { c.AbortInterval = time.Second })
	e.loadAll(1)
	e.init("prep", 4, 60000)
	e.init("open", 4, 5000)
	e.add("prep", 1000, 0, 3, tp("a", 0), tp("b", 0))
	e.add("open", 1001, 0, 3, tp("c", 0))
	e.h.with(func(h *fakeHost) { h.down[1] = true })
	if er := e.end("prep", 1000, 0, true, 3); er.ErrorCode != 0 {
		t.Fatalf("end: %+v", er)
	}
	e.c.Close()

	e.h.with(func(h *fakeHost) { h.down[1] = false })
	e.start(func(c *Config) { c.AbortInterval = time.Second })
	e.loadAll(2)
	e.waitState("prep", "CompleteCommit")
	ms := e.h.markers()
	if len(ms) != 2 || ms[0].cepoch != 2 || !ms[0].commit {
		t.Fatalf("markers %+v", ms)
	}
	if d := e.describe("open"); d.State != "Ongoing" {
		t.Fatalf("open: %+v", d)
	}
	// The open transaction's 5 s run out; the periodic check aborts it,
	// fencing its producer.
	e.clock.Advance(6 * time.Second)
	e.waitState("open", "CompleteAbort")
	if d := e.describe("open"); d.ProducerEpoch != 2 {
		t.Fatalf("open after timeout: %+v", d)
	}
	if er := e.end("open", 1001, 0, true, 3); er.ErrorCode != kerr.ProducerFenced.Code {
		t.Fatalf("zombie end: %+v", er)
	}
	if st, _ := e.c.Stats(ctx(t)); st.Events["txn_timed_out"] != 1 || st.Events["txn_aborted"] != 1 || st.Events["txn_committed"] != 1 {
		t.Fatalf("events %v", st.Events)
	}
}

// Writes queued while an append waits go out together as one batch.
func TestWritesAreGroupCommitted(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	rep := e.h.replicas[0]
	gate := make(chan struct{})
	rep.set(func(r *fakeReplica) { r.gate = gate })
	done := make(chan int16, 8)
	init := func(id string) { done <- e.init(id, 4, 60000).ErrorCode }
	go init("first")
	eventually(t, 5*time.Second, "first append waiting", func() bool {
		rep.mu.Lock()
		defer rep.mu.Unlock()
		return rep.waiting == 1
	})
	for k := range 7 {
		go init(string(rune('a' + k)))
	}
	// The first append holds the gate; the other seven queue behind it.
	eventually(t, 5*time.Second, "queued writes", func() bool {
		n := 0
		e.onShard(0, func(s *shard) {
			w := s.slots[0].w
			w.mu.Lock()
			n = len(w.queue)
			w.mu.Unlock()
		})
		return n == 7
	})
	close(gate)
	for range 8 {
		if code := <-done; code != 0 {
			t.Fatalf("init: %d", code)
		}
	}
	rep.mu.Lock()
	appends := rep.appends
	rep.mu.Unlock()
	if appends != 2 {
		t.Fatalf("%d appends for 8 writes, want 2", appends)
	}
}

// A failed write answers with the coordinator's code and changes nothing;
// losing the leadership answers the requests waiting on writes with
// NOT_COORDINATOR.
func TestWriteFailures(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	rep := e.h.replicas[0]
	rep.set(func(r *fakeReplica) { r.fail = kerr.NotEnoughReplicas })
	if r := e.init("t", 4, 60000); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("init: %+v", r)
	}
	rep.set(func(r *fakeReplica) { r.fail = nil })
	if r := e.init("t", 4, 60000); r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("retry: %+v", r)
	}
	gate := make(chan struct{})
	rep.set(func(r *fakeReplica) { r.gate = gate })
	done := make(chan *kmsg.InitProducerIDResponse, 1)
	go func() { done <- e.init("t", 4, 60000) }()
	eventually(t, 5*time.Second, "write in flight", func() bool {
		var n int
		e.onShard(0, func(s *shard) { n = s.slots[0].p.PendingWrites() })
		return n == 1
	})
	rep.set(func(r *fakeReplica) { r.leading = false })
	e.c.Resigned(0)
	if r := <-done; r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("resigned: %+v", r)
	}
	close(gate)
}

// transactional.id.expiration.ms, on its own timer.
func TestExpiration(t *testing.T) {
	e := newEnv(t, 1, func(c *Config) { c.IDExpiration = time.Minute; c.ExpirationInterval = 10 * time.Second })
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.clock.Advance(50 * time.Second)
	if d := e.describe("t"); d.ErrorCode != 0 {
		t.Fatalf("expired early: %+v", d)
	}
	e.clock.Advance(20 * time.Second)
	eventually(t, 5*time.Second, "expired", func() bool {
		return e.describe("t").ErrorCode == kerr.TransactionalIDNotFound.Code
	})
	if recs := e.h.replicas[0].records(t); recs[len(recs)-1] != "t tombstone" {
		t.Fatalf("log %v", recs)
	}
}

func TestListTransactions(t *testing.T) {
	e := newEnv(t, 3, nil)
	e.loadAll(0)
	for _, id := range []string{"x1", "x2", "y1"} {
		e.init(id, 4, 60000)
	}
	e.add("x2", 1001, 0, 3, tp("a", 0))
	list := func(v int16, fill func(*kmsg.ListTransactionsRequest)) *kmsg.ListTransactionsResponse {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = v
		fill(req)
		resp, err := e.c.ListTransactions(ctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ids := func(r *kmsg.ListTransactionsResponse) []string {
		var out []string
		for _, s := range r.TransactionStates {
			out = append(out, s.TransactionalID+":"+s.TransactionState)
		}
		return out
	}
	if got := ids(list(0, func(*kmsg.ListTransactionsRequest) {})); !slices.Equal(got, []string{"x1:Empty", "x2:Ongoing", "y1:Empty"}) {
		t.Errorf("all: %v", got)
	}
	r := list(0, func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Ongoing", "Bogus"} })
	if got := ids(r); !slices.Equal(got, []string{"x2:Ongoing"}) || !slices.Equal(r.UnknownStateFilters, []string{"Bogus"}) {
		t.Errorf("states: %v %v", got, r.UnknownStateFilters)
	}
	if got := ids(list(0, func(r *kmsg.ListTransactionsRequest) { r.StateFilters = []string{"Bogus"} })); len(got) != 0 {
		t.Errorf("only unknown states: %v", got)
	}
	if got := ids(list(0, func(r *kmsg.ListTransactionsRequest) { r.ProducerIDFilters = []int64{1002} })); !slices.Equal(got, []string{"y1:Empty"}) {
		t.Errorf("pids: %v", got)
	}
	p := "x."
	if got := ids(list(2, func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &p })); !slices.Equal(got, []string{"x1:Empty", "x2:Ongoing"}) {
		t.Errorf("pattern: %v", got)
	}
	bad := "x["
	if r := list(2, func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &bad }); r.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Errorf("bad pattern: %+v", r)
	}
	// v0 has no pattern: ignored.
	if got := ids(list(0, func(r *kmsg.ListTransactionsRequest) { r.TransactionalIDPattern = &bad })); len(got) != 3 {
		t.Errorf("v0 pattern: %v", got)
	}
}

func TestDescribeTransactions(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 30000)
	e.add("t", 1000, 0, 3, tp("b", 1), tp("a", 2), tp("b", 0))
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{"t", "", "missing"}
	resp, err := e.c.DescribeTransactions(ctx(t), req)
	if err != nil {
		t.Fatal(err)
	}
	d := resp.TransactionStates[0]
	if d.ErrorCode != 0 || d.State != "Ongoing" || d.ProducerID != 1000 || d.TimeoutMillis != 30000 ||
		d.StartTimestamp != testStart.UnixMilli() || len(d.Topics) != 2 || d.Topics[1].Topic != "b" || !slices.Equal(d.Topics[1].Partitions, []int32{0, 1}) {
		t.Errorf("t: %+v", d)
	}
	if c := resp.TransactionStates[1].ErrorCode; c != kerr.InvalidRequest.Code {
		t.Errorf("empty id: %d", c)
	}
	if c := resp.TransactionStates[2].ErrorCode; c != kerr.TransactionalIDNotFound.Code {
		t.Errorf("missing: %d", c)
	}
}

func TestAddOffsetsToTxn(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = "t", 1000, 0, "g"
	resp, err := e.c.AddOffsetsToTxn(ctx(t), req, 17)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("%+v %v", resp, err)
	}
	d := e.describe("t")
	if len(d.Topics) != 1 || d.Topics[0].Topic != OffsetsTopic || d.Topics[0].Partitions[0] != 17 {
		t.Fatalf("%+v", d)
	}
}

// A caller that gives up gets its context's error; the coordinator keeps
// going and answers others.
func TestCallerCancels(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	gate := make(chan struct{})
	e.h.replicas[0].set(func(r *fakeReplica) { r.gate = gate })
	c, cancel := context.WithCancel(context.Background())
	id := "t"
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = &id, 1000
	errc := make(chan error, 1)
	go func() {
		_, err := e.c.InitProducerID(c, req)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	close(gate)
	eventually(t, 5*time.Second, "written anyway", func() bool { return e.describe("t").ErrorCode == 0 })
}

func TestMarkersRequestGroupsTopics(t *testing.T) {
	req := MarkersRequest([]txn.Markers{{
		ProducerID: 7, ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 9, Version: txn.V2,
		Partitions: []txn.TopicPartition{tp("a", 0), tp("a", 1), tp("b", 4)},
	}})
	m := req.Markers[0]
	if req.Version != 2 || m.ProducerID != 7 || m.ProducerEpoch != 3 || !m.Committed || m.CoordinatorEpoch != 9 ||
		m.TransactionVersion != 2 || len(m.Topics) != 2 || !slices.Equal(m.Topics[0].Partitions, []int32{0, 1}) {
		t.Fatalf("%+v", req)
	}
}

func TestTakeBatchOneMarkerPerProducer(t *testing.T) {
	j := func(id string, pid int64, epoch int16, parts ...txn.TopicPartition) markerJob {
		return markerJob{m: txn.Markers{TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Partitions: parts}}
	}
	batch, rest := takeBatch([]markerJob{
		j("t1", 1, 0, tp("a", 0)),
		j("t2", 2, 0, tp("a", 0)),
		j("t1", 1, 0, tp("b", 0)), // same transaction: merged
		j("t9", 1, 5, tp("c", 0)), // same producer id, another transaction: next request
	})
	if len(batch) != 2 || len(batch[0].m.Partitions) != 2 || len(rest) != 1 || rest[0].m.TransactionalID != "t9" {
		t.Fatalf("batch %+v rest %+v", batch, rest)
	}
}

// Records are written only under the coordinator epoch they were loaded
// at: a replica that leads at another epoch (a newer leadership this node
// has not loaded yet) refuses them, and the producer looks the
// coordinator up again.
func TestWritesFencedByCoordinatorEpoch(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(1)
	e.h.lead(0, 2)
	if r := e.init("t", 4, 60000); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("init: %+v", r)
	}
	if recs := e.h.replicas[0].records(t); len(recs) != 0 {
		t.Fatalf("written: %v", recs)
	}
	e.c.LeadershipChanged()
	eventually(t, 5*time.Second, "reloaded at epoch 2", func() bool { return e.init("t", 4, 60000).ErrorCode == 0 })
}

// A partition without a leader gets its marker once it has one.
func TestMarkerWaitsForLeader(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.add("t", 1000, 0, 3, tp("a", 0))
	e.h.with(func(h *fakeHost) { h.leaders[tp("a", 0)] = -1 })
	e.end("t", 1000, 0, true, 3)
	eventually(t, 5*time.Second, "retry armed", func() bool { return e.clock.Pending() >= 3 })
	e.clock.Advance(100 * time.Millisecond)
	eventually(t, 5*time.Second, "retry armed again", func() bool { return e.clock.Pending() >= 3 })
	if len(e.h.markers()) != 0 || e.describe("t").State != "PrepareCommit" {
		t.Fatal("marker written without a leader")
	}
	e.h.with(func(h *fakeHost) { h.leaders[tp("a", 0)] = 2 })
	e.clock.Advance(100 * time.Millisecond)
	e.waitState("t", "CompleteCommit")
	if ms := e.h.markers(); len(ms) != 1 || ms[0].node != 2 {
		t.Fatalf("markers %+v", ms)
	}
}

// Closing answers what waits: a write in flight NOT_COORDINATOR, later
// calls NOT_COORDINATOR.
func TestCloseAnswersWaiters(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	gate := make(chan struct{})
	defer close(gate)
	e.h.replicas[0].set(func(r *fakeReplica) { r.gate = gate })
	done := make(chan *kmsg.InitProducerIDResponse, 1)
	go func() { done <- e.init("t", 4, 60000) }()
	eventually(t, 5*time.Second, "write in flight", func() bool {
		var n int
		e.onShard(0, func(s *shard) { n = s.slots[0].p.PendingWrites() })
		return n == 1
	})
	e.c.Close()
	if r := <-done; r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("in flight: %+v", r)
	}
	if r := e.init("t", 4, 60000); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("after close: %+v", r)
	}
	res, err := e.c.VerifyTransaction(ctx(t), "t", 1, 0, []txn.TopicPartition{tp("a", 0)}, VerifyOnly)
	if err != nil || res[tp("a", 0)] != kerr.NetworkException.Code {
		t.Fatalf("verify after close: %v %v", res, err)
	}
}

// FindCoordinator names the leader of a transactional id's state
// partition: -1 while it has none or no longer exists, and says when the
// topic does not exist here yet, for the broker to create it.
func TestCoordinatorNode(t *testing.T) {
	if node, exists := newEnv(t, 0, nil).c.CoordinatorNode("t"); node != -1 || exists {
		t.Fatalf("no topic: node %d, exists %v", node, exists)
	}
	e := newEnv(t, 3, nil)
	i, _ := e.c.PartitionFor("t")
	state := tp(Topic, i)
	for _, tc := range []struct {
		name   string
		set    func(h *fakeHost)
		leader int32
	}{
		{name: "led", set: func(h *fakeHost) { h.leaders[state] = 7 }, leader: 7},
		{name: "no leader", set: func(h *fakeHost) { h.leaders[state] = -1 }, leader: -1},
		{name: "deleted", set: func(h *fakeHost) { h.deleted[state] = true }, leader: -1},
		{name: "another partition led elsewhere", set: func(h *fakeHost) {
			delete(h.deleted, state)
			h.leaders[state] = 2
			h.leaders[tp(Topic, (i+1)%3)] = 9
		}, leader: 2},
	} {
		e.h.with(tc.set)
		if node, exists := e.c.CoordinatorNode("t"); node != tc.leader || !exists {
			t.Fatalf("%s: node %d, exists %v; want %d", tc.name, node, exists, tc.leader)
		}
	}
}
