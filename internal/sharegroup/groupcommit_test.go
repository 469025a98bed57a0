package sharegroup

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
)

// written returns the records written since the first n, decoded.
func (s *heldWrites) written(t *testing.T, n int) []share.StateRecord {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []share.StateRecord
	for _, v := range s.values[n:] {
		rec, err := share.DecodeStateRecord(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

func (s *heldWrites) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.values)
}

// starts lists the start offsets of records.
func starts(recs []share.StateRecord) []int64 {
	var out []int64
	for _, r := range recs {
		out = append(out, r.StartOffset)
	}
	return out
}

// deferredRound sends the tagged fetch of a record_limit round that
// acknowledges first to first+3 and acquires the next four, answered
// before its acknowledgement is durable.
func (r *deferRig) deferredRound(first int64) {
	r.t.Helper()
	resp := answers(r.t, r, async(func() *kmsg.ShareFetchResponse { return r.fetch(&[2]int64{first, first + 3}, true) }), "a tagged fetch")
	if got := acquiredOf(r.t, resp); got != [2]int64{first + 4, first + 7} {
		r.t.Fatalf("acquired %v, want %d-%d", got, first+4, first+7)
	}
}

// deferredRounds runs three rounds, acknowledging 0-11 in all.
func (r *deferRig) deferredRounds() {
	r.t.Helper()
	for first := int64(0); first < 12; first += 4 {
		r.deferredRound(first)
	}
}

// TestDeferredAcksWrittenTogether: three rounds of tagged fetches, each
// acknowledging the previous round's records, write nothing while their
// partition gathers them; the flush writes one delta with the start
// offset past all three (0-11 accepted), and a commit's
// ShareAcknowledge answers once that write is durable. With the default
// flush delay (5 ms) the timer writes the batch with no request asking.
// Before, each round queued a write of its own.
func TestDeferredAcksWrittenTogether(t *testing.T) {
	r, before := gatheredRounds(t)
	c := async(func() *kmsg.ShareAcknowledgeResponse { return r.acknowledge(false) })
	if code := ackErrOf(t, waitsFor(t, r.st, c, "a commit's ShareAcknowledge")); code > 0 {
		t.Fatalf("ShareAcknowledge answered %v", kerr.ErrorForCode(code))
	}
	recs := r.st.written(t, before)
	if len(recs) != 1 || recs[0].Kind != share.Delta || recs[0].StartOffset != 12 {
		t.Fatalf("wrote %+v, want one delta with start offset 12", recs)
	}

	r = newDeferRig(t, 0)
	before = r.st.count()
	r.deferredRounds()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		recs := r.st.written(t, before)
		if n := len(recs); n > 0 && recs[n-1].StartOffset == 12 {
			if n > 3 {
				t.Fatalf("%d writes for three rounds: %v", n, starts(recs))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flush timer wrote %v, want the start offset to reach 12", starts(r.st.written(t, before)))
		}
	}
}

// TestGatheredAcksWrittenFirst: a tagged fetch's acknowledgement of 0-3 is
// gathered; a fetch without the tag then acknowledges 4-7, a change
// written at once. The gathered change is written before it, so the
// store has the changes in the order they were made (start offsets 4
// then 8), and that fetch answers once both are durable.
func TestGatheredAcksWrittenFirst(t *testing.T) {
	r := newDeferRig(t, time.Hour)
	before := r.st.count()
	r.deferredRound(0)
	c := async(func() *kmsg.ShareFetchResponse { return r.fetch(&[2]int64{4, 7}, false) })
	var resp *kmsg.ShareFetchResponse
	for resp == nil {
		select {
		case resp = <-c:
		case <-time.After(time.Millisecond):
			r.st.release()
		}
	}
	if code := ackCodeOf(resp); code != 0 {
		t.Fatalf("acknowledgement answered %v", kerr.ErrorForCode(code))
	}
	recs := r.st.written(t, before)
	if got := starts(recs); len(got) < 2 || got[0] != 4 || got[1] != 8 {
		t.Fatalf("start offsets written %v, want 4 then 8", got)
	}
}

// TestCloseWritesGatheredAcks: acknowledgements a partition gathers when
// the manager closes (the flush delay not yet passed) are written by
// Close, not dropped: a broker stopping cleanly keeps them.
func TestCloseWritesGatheredAcks(t *testing.T) {
	r, before := gatheredRounds(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.m.Close()
	}()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(time.Millisecond):
			r.st.release()
		}
	}
	recs := r.st.written(t, before)
	if len(recs) != 1 || recs[0].Kind != share.Delta || recs[0].StartOffset != 12 {
		t.Fatalf("Close wrote %+v, want one delta with start offset 12", recs)
	}
}

// gatheredRounds runs three deferred rounds on a rig whose flush delay is
// an hour and checks that the partition only gathered them (no state
// write yet); it returns the rig and the write count before the rounds.
func gatheredRounds(t *testing.T) (*deferRig, int) {
	t.Helper()
	r := newDeferRig(t, time.Hour)
	before := r.st.count()
	r.deferredRounds()
	if n := r.st.count() - before; n != 0 {
		t.Fatalf("%d state writes while the partition gathered three rounds' acknowledgements, want none (the flush delay is an hour)", n)
	}
	return r, before
}
