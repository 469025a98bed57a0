package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/txn"
)

// A partition leader checks a producer's transaction before appending its
// batch: what the coordinator answers, mapped as Kafka's produce path
// maps it for each Produce version.
func TestVerifyForProduce(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.loadAll(0)
	e.init("t", 4, 60000)
	e.add("t", 1000, 0, 3, tp("a", 0))
	verify := func(epoch int16, version int16, parts ...txn.TopicPartition) map[txn.TopicPartition]int16 {
		t.Helper()
		res, err := e.c.VerifyForProduce(ctx(t), "t", 1000, epoch, parts, version)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := verify(0, 9, tp("a", 0)); len(res) != 0 {
		t.Fatalf("in the transaction: %v", res)
	}
	if res := verify(0, 9, tp("a", 0), tp("b", 0)); len(res) != 1 || res[tp("b", 0)] != kerr.InvalidTxnState.Code {
		t.Fatalf("v9, not added: %v", res)
	}
	if res := verify(0, 11, tp("b", 0)); res[tp("b", 0)] != kerr.TransactionAbortable.Code {
		t.Fatalf("v11, not added: %v", res)
	}
	if res := verify(1, 11, tp("a", 0)); res[tp("a", 0)] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("wrong epoch: %v", res)
	}
	// The coordinator's partition has no leader: retriable for the client.
	i, _ := e.c.PartitionFor("t")
	e.h.with(func(h *fakeHost) { h.leaders[tp(Topic, i)] = -1 })
	if res := verify(0, 9, tp("a", 0)); res[tp("a", 0)] != kerr.NotEnoughReplicas.Code {
		t.Fatalf("no coordinator: %v", res)
	}
	// Nothing was added by verifying.
	if d := e.describe("t"); len(d.Topics) != 1 {
		t.Fatalf("verify added: %+v", d)
	}
}

// Under transaction version 2 (Produce v12) the leader adds the partition;
// while the previous transaction completes it retries for 100 ms, then
// lets the producer retry.
func TestVerifyAddsUnderVersion2(t *testing.T) {
	e := newEnv(t, 1, nil)
	e.loadAll(0)
	e.init("t", 5, 60000)
	res, err := e.c.VerifyForProduce(ctx(t), "t", 1000, 0, []txn.TopicPartition{tp("a", 0)}, 12)
	if err != nil || len(res) != 0 {
		t.Fatalf("add: %v %v", res, err)
	}
	if d := e.describe("t"); d.State != "Ongoing" || d.Topics[0].Topic != "a" {
		t.Fatalf("not added: %+v", d)
	}
	// The markers hang: the transaction stays PrepareCommit, with no
	// retry timer of their own.
	gate := make(chan struct{})
	defer close(gate)
	e.h.with(func(h *fakeHost) { h.markerGate = gate })
	if er := e.end("t", 1000, 0, true, 5); er.ErrorCode != 0 || er.ProducerEpoch != 1 {
		t.Fatalf("end: %+v", er)
	}
	type result struct {
		res map[txn.TopicPartition]int16
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := e.c.VerifyForProduce(ctx(t), "t", 1000, 1, []txn.TopicPartition{tp("b", 0)}, 12)
		done <- result{res, err}
	}()
	var r result
	eventually(t, 5*time.Second, "retries give up", func() bool {
		select {
		case r = <-done:
			return true
		default:
			// Time moves only while the leader waits out its backoff
			// (its timer is the third, after the two periodic ones).
			if e.clock.Pending() >= 3 {
				e.clock.Advance(20 * time.Millisecond)
			}
			return false
		}
	})
	if r.err != nil || r.res[tp("b", 0)] != kerr.ConcurrentTransactions.Code {
		t.Fatalf("while completing: %+v", r)
	}
	var n int
	e.h.with(func(h *fakeHost) { n = len(h.verifies) })
	if n < 3 {
		t.Fatalf("%d requests: no retries", n)
	}
}

// Verifications queued while a request to the node is out go together in
// the next one; a second one of the same transaction replaces the first.
func TestVerificationsBatchPerNode(t *testing.T) {
	e := newEnv(t, 3, nil)
	e.loadAll(0)
	for _, id := range []string{"t1", "t2", "t3"} {
		e.init(id, 4, 60000)
	}
	gate := make(chan struct{})
	e.h.with(func(h *fakeHost) { h.verifyGate = gate })
	type res struct {
		id  string
		out map[txn.TopicPartition]int16
	}
	done := make(chan res, 8)
	verify := func(id string, pid int64, epoch int16) {
		out, err := e.c.VerifyTransaction(context.Background(), id, pid, epoch, []txn.TopicPartition{tp("a", 0)}, VerifyGenericError)
		if err != nil {
			t.Error(err)
		}
		done <- res{id, out}
	}
	go verify("t1", 1000, 0)
	eventually(t, 5*time.Second, "first request out", func() bool {
		var n int
		e.h.with(func(h *fakeHost) { n = len(h.verifies) })
		return n == 1
	})
	go verify("t2", 1001, 0)
	go verify("t3", 1002, 0)
	// Queue t3 twice: the older epoch loses at once.
	eventually(t, 5*time.Second, "two queued", func() bool {
		e.c.verifier.mu.Lock()
		defer e.c.verifier.mu.Unlock()
		for _, n := range e.c.verifier.nodes {
			return len(n.queue) == 2
		}
		return false
	})
	go verify("t3", 1002, -1)
	if r := <-done; r.id != "t3" || r.out[tp("a", 0)] != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("older epoch queued behind a newer one: %+v", r)
	}
	close(gate)
	for range 3 {
		r := <-done
		if r.out[tp("a", 0)] != kerr.TransactionAbortable.Code {
			t.Fatalf("%s: %v", r.id, r.out)
		}
	}
	e.h.with(func(h *fakeHost) {
		if len(h.verifies) != 2 || h.verifies[1] != 2 {
			t.Fatalf("requests carried %v transactions, want [1 2]", h.verifies)
		}
	})
}

func TestOperationsAndCodeMaps(t *testing.T) {
	for v, want := range map[int16]Operation{3: VerifyOnly, 10: VerifyOnly, 11: VerifyGenericError, 12: AddPartition, 13: AddPartition} {
		if got := ProduceOperation(v); got != want {
			t.Errorf("Produce v%d: %d", v, got)
		}
	}
	for v, want := range map[int16]Operation{0: VerifyOnly, 3: VerifyOnly, 4: VerifyGenericError, 5: AddPartition} {
		if got := TxnOffsetCommitOperation(v); got != want {
			t.Errorf("TxnOffsetCommit v%d: %d", v, got)
		}
	}
	for _, tc := range []struct {
		code int16
		op   Operation
		want int16
	}{
		{kerr.NotCoordinator.Code, AddPartition, kerr.NotEnoughReplicas.Code},
		{kerr.NetworkException.Code, VerifyOnly, kerr.NotEnoughReplicas.Code},
		{kerr.ConcurrentTransactions.Code, VerifyGenericError, kerr.NotEnoughReplicas.Code},
		{kerr.ConcurrentTransactions.Code, AddPartition, kerr.ConcurrentTransactions.Code},
		{kerr.InvalidTxnState.Code, VerifyOnly, kerr.InvalidTxnState.Code},
	} {
		if got := ProduceError(tc.code, tc.op); got != tc.want {
			t.Errorf("ProduceError(%d, %d) = %d, want %d", tc.code, tc.op, got, tc.want)
		}
	}
	if TxnOffsetCommitError(kerr.NetworkException.Code) != kerr.CoordinatorLoadInProgress.Code ||
		TxnOffsetCommitError(kerr.TransactionAbortable.Code) != kerr.TransactionAbortable.Code {
		t.Error("TxnOffsetCommitError")
	}
}
