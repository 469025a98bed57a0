package sharegroup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
	"weir/internal/sharestate"
	"weir/internal/wiretag"
)

// heldWrites is a state store whose writes complete only when released;
// values are the records written, in order.
type heldWrites struct {
	slowState
	mu      sync.Mutex
	pending []func(error)
	values  [][]byte
}

func (s *heldWrites) Write(_, value []byte, _ bool, _ sharestate.Fence) *sharestate.Ticket {
	t, done := sharestate.PendingTicket()
	s.mu.Lock()
	s.pending = append(s.pending, done)
	s.values = append(s.values, value)
	s.mu.Unlock()
	return t
}

// release completes every write made so far and says how many.
func (s *heldWrites) release() int { return s.fail(nil) }

// fail completes every write made so far with err and says how many.
func (s *heldWrites) fail(err error) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, done := range s.pending {
		done(err)
	}
	n := len(s.pending)
	s.pending = nil
	return n
}

// held is how many writes wait to be released.
func (s *heldWrites) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// deferRig is one member of group g with a share session on one
// partition of 40 records, whose state writes are held until released;
// the session's first fetch acquired offsets 0-3.
type deferRig struct {
	t     *testing.T
	m     *Manager
	st    *heldWrites
	id    [16]byte
	epoch int32 // the session epoch the next request carries
}

// flushes are the Config.DeferredFlush values the deferral's tests run
// with: each deferred write queued at once, and gathered for longer than
// any test takes (written only when a request needs its outcome, or by
// flushAll).
var flushes = []time.Duration{-1, time.Hour}

func newDeferRig(t *testing.T, flush time.Duration) *deferRig {
	t.Helper()
	h := newFakeHost()
	r := &deferRig{t: t, id: h.addTopic(t, "q", 1, 40), st: &heldWrites{slowState: *newSlowState()}}
	r.m = New(Config{AutoOffsetReset: "earliest", DeferredFlush: flush}, h, r.st, nil)
	t.Cleanup(r.m.Close)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "g", "member-1", 0, []string{"q"}
	if resp := r.m.Heartbeat(context.Background(), hb, share.ClientInfo{}); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	// The first fetch loads the partition; its snapshot's write is
	// released until the answer comes.
	first := async(func() *kmsg.ShareFetchResponse { return r.fetch(nil, false) })
	var resp *kmsg.ShareFetchResponse
	for resp == nil {
		select {
		case resp = <-first:
		case <-time.After(time.Millisecond):
			r.st.release()
		}
	}
	r.st.release()
	if got := acquiredOf(t, resp); got != [2]int64{0, 3} {
		t.Fatalf("the first fetch acquired %v, want 0-3", got)
	}
	return r
}

// async runs fn on a goroutine the test waits for through the channel.
func async[T any](fn func() T) <-chan T {
	c := make(chan T, 1)
	go func() { c <- fn() }()
	return c
}

// fetch sends a record_limit ShareFetch for 4 records acknowledging
// (accepting) offsets ack[0]-ack[1] if ack is not nil, with
// wiretag.ShareFetchDeferAcks when tagged.
func (r *deferRig) fetch(ack *[2]int64, tagged bool) *kmsg.ShareFetchResponse {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version, req.GroupID, req.MemberID = 2, kmsg.StringPtr("g"), kmsg.StringPtr("member-1")
	req.ShareSessionEpoch, req.MaxRecords, req.BatchSize, req.MaxBytes = r.next(), 4, 4, 1<<20
	req.ShareAcquireMode = int8(share.RecordLimit)
	if tagged {
		wiretag.SetShareFetchDeferAcks(&req.UnknownTags)
	}
	tp := kmsg.NewShareFetchRequestTopicPartition()
	if ack != nil {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = ack[0], ack[1], []int8{int8(share.AckAccept)}
		tp.AcknowledgementBatches = append(tp.AcknowledgementBatches, b)
	}
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = r.id
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	return r.m.ShareFetch(context.Background(), req).Response(func(*Records) []byte { return nil })
}

// acknowledge sends a ShareAcknowledge with no acknowledgements (what a
// commit with nothing new sends), final closing the session.
func (r *deferRig) acknowledge(final bool) *kmsg.ShareAcknowledgeResponse {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version, req.GroupID, req.MemberID = 2, kmsg.StringPtr("g"), kmsg.StringPtr("member-1")
	req.ShareSessionEpoch = r.next()
	if final {
		req.ShareSessionEpoch = -1
	}
	return r.m.Acknowledge(context.Background(), req)
}

func (r *deferRig) next() int32 {
	e := r.epoch
	r.epoch = NextSessionEpoch(e)
	return e
}

// acquiredOf is the one acquired range of a ShareFetch answer, {-1, -1}
// when none.
func acquiredOf(t *testing.T, resp *kmsg.ShareFetchResponse) [2]int64 {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	out := [2]int64{-1, -1}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			for _, a := range p.AcquiredRecords {
				out = [2]int64{a.FirstOffset, a.LastOffset}
			}
		}
	}
	return out
}

// ackCodeOf is the AcknowledgeErrorCode of the partition in a ShareFetch
// answer, -1 when the answer does not list it.
func ackCodeOf(resp *kmsg.ShareFetchResponse) int16 {
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			return p.AcknowledgeErrorCode
		}
	}
	return -1
}

// ackErrOf is the ErrorCode of the partition in a ShareAcknowledge
// answer, -1 when the answer does not list it.
func ackErrOf(t *testing.T, resp *kmsg.ShareAcknowledgeResponse) int16 {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share acknowledge: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			return p.ErrorCode
		}
	}
	return -1
}

// waitsFor fails the test unless c stays silent while the held writes
// are, then delivers once they are released.
func waitsFor[T any](t *testing.T, st *heldWrites, c <-chan T, what string) T {
	t.Helper()
	select {
	case <-c:
		t.Fatalf("%s answered before the acknowledgements were durable", what)
	case <-time.After(50 * time.Millisecond):
	}
	if st.release() == 0 {
		t.Fatalf("%s: no write was held", what)
	}
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not answer once the writes were durable", what)
	}
	panic("unreachable")
}

// undurable says whether a write of the partition's state is held or
// its batch not yet written (groupcommit.go).
func (r *deferRig) undurable() bool {
	sp, _, _ := r.m.partFor("g", r.id, 0)
	sp.mu.Lock()
	gathered := sp.batch != nil
	sp.mu.Unlock()
	return gathered || r.st.held() > 0
}

// answers fails the test unless c delivers while a write is still held
// or gathered.
func answers[T any](t *testing.T, r *deferRig, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		if !r.undurable() {
			t.Fatalf("%s: no write was held or gathered when it answered", what)
		}
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the held acknowledgement write", what)
	}
	panic("unreachable")
}

// TestDeferredAcksAnswerAtOnce: a ShareFetch acknowledging 0-3 and asking
// for the next records, its acknowledgement write held. It acquires 4-7
// while the write is under way either way. With
// wiretag.ShareFetchDeferAcks it answers while the write is held, the
// acknowledgement applied (0-3 are not delivered again); without it, as
// Kafka does, it answers only once the write is durable, with the
// acknowledgement's result and the records: a round waits for one write,
// not two in a row.
func TestDeferredAcksAnswerAtOnce(t *testing.T) {
	for i := range 4 {
		tagged, r := i%2 == 0, newDeferRig(t, flushes[i/2])
		c := async(func() *kmsg.ShareFetchResponse { return r.fetch(&[2]int64{0, 3}, tagged) })
		var resp *kmsg.ShareFetchResponse
		if tagged {
			resp = answers(t, r, c, "a tagged fetch")
		} else {
			sp, _, _ := r.m.partFor("g", r.id, 0)
			end := func() int64 {
				sp.mu.Lock()
				defer sp.mu.Unlock()
				return sp.p.EndOffset()
			}
			for deadline := time.Now().Add(10 * time.Second); end() != 7; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the next records were not acquired while the acknowledgement was written (end %d)", end())
				}
			}
			resp = waitsFor(t, r.st, c, "a fetch without the tag")
		}
		if got := acquiredOf(t, resp); got != [2]int64{4, 7} {
			t.Fatalf("tagged=%v: acquired %v, want 4-7", tagged, got)
		}
		if code := ackCodeOf(resp); code != 0 {
			t.Fatalf("tagged=%v: acknowledgement answered %v", tagged, kerr.ErrorForCode(code))
		}
	}
}

// TestDeferredAcksWaitedForByTheNextRequest: after a tagged ShareFetch
// answered with its acknowledgement write held, the member's next request
// waits for that write when it needs the outcome (a ShareAcknowledge, as
// a commit sends; a ShareFetch without the tag; a session close by either
// request) and succeeds once it is durable; another tagged ShareFetch
// does not wait.
func TestDeferredAcksWaitedForByTheNextRequest(t *testing.T) {
	type answer struct{ code int16 }
	for _, tc := range []struct {
		name string
		wait bool
		send func(r *deferRig) answer
	}{
		{"acknowledge", true, func(r *deferRig) answer { return answer{ackErrOf(r.t, r.acknowledge(false))} }},
		{"acknowledge closing the session", true, func(r *deferRig) answer { return answer{ackErrOf(r.t, r.acknowledge(true))} }},
		{"fetch without the tag", true, func(r *deferRig) answer { return answer{ackCodeOf(r.fetch(nil, false))} }},
		{"fetch closing the session", true, func(r *deferRig) answer {
			r.epoch = -1
			return answer{ackCodeOf(r.fetch(nil, false))}
		}},
		{"tagged fetch", false, func(r *deferRig) answer { return answer{ackCodeOf(r.fetch(nil, true))} }},
	} {
		for _, flush := range flushes {
			t.Run(fmt.Sprintf("%s/flush %v", tc.name, flush), func(t *testing.T) {
				r := newDeferRig(t, flush)
				r.deferredRound(0)
				c := async(func() answer { return tc.send(r) })
				var got answer
				if tc.wait {
					got = waitsFor(t, r.st, c, tc.name)
				} else {
					got = answers(t, r, c, tc.name)
				}
				// A success lists no failure: the partition is absent (-1)
				// or answered 0.
				if got.code > 0 {
					t.Fatalf("answered %v", kerr.ErrorForCode(got.code))
				}
			})
		}
	}
}

// TestDeferredAckFailureReportedAndRedelivered: the write of a tagged
// ShareFetch's acknowledgement of 0-3 fails. The member's next answer for
// the partition reports it (AcknowledgeErrorCode on a ShareFetch, tagged
// or not; ErrorCode on a ShareAcknowledge), once: the answer after that
// is clean. The partition rolled back to its durable state, which lacks
// the acknowledgement, so offset 0 is delivered again.
func TestDeferredAckFailureReportedAndRedelivered(t *testing.T) {
	storage := kerr.KafkaStorageError.Code
	none := [2]int64{-1, -1}
	for _, tc := range []struct {
		name string
		// next sends the request and returns the partition's
		// acknowledgement code and what it acquired.
		next func(r *deferRig) (int16, [2]int64)
	}{
		{"tagged fetch", func(r *deferRig) (int16, [2]int64) {
			resp := r.fetch(nil, true)
			return ackCodeOf(resp), acquiredOf(r.t, resp)
		}},
		{"fetch without the tag", func(r *deferRig) (int16, [2]int64) {
			resp := r.fetch(nil, false)
			return ackCodeOf(resp), acquiredOf(r.t, resp)
		}},
		{"acknowledge", func(r *deferRig) (int16, [2]int64) { return ackErrOf(r.t, r.acknowledge(false)), none }},
	} {
		for _, flush := range flushes {
			t.Run(fmt.Sprintf("%s/flush %v", tc.name, flush), func(t *testing.T) {
				r := newDeferRig(t, flush)
				r.deferredRound(0)
				r.m.flushAll() // a gathered write goes out (the timer's part)
				if r.st.fail(errors.New("replicated append failed")) == 0 {
					t.Fatal("no write was held")
				}
				// Writes of the restore that follows succeed.
				stop := make(chan struct{})
				done := async(func() struct{} {
					for {
						select {
						case <-stop:
							return struct{}{}
						case <-time.After(time.Millisecond):
							r.st.release()
						}
					}
				})
				defer func() { close(stop); <-done }()
				code, first := tc.next(r)
				if code != storage {
					t.Fatalf("the next answer reported %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
				}
				resp := r.fetch(nil, true)
				if code := ackCodeOf(resp); code > 0 {
					t.Fatalf("the failure was reported again: %v", kerr.ErrorForCode(code))
				}
				// The restore happens at the partition's next use: the
				// reporting fetch's acquisition, or the fetch after a
				// ShareAcknowledge.
				second := acquiredOf(t, resp)
				if first[0] != 0 && second[0] != 0 {
					t.Fatalf("after the failed write the member acquired %v then %v, want offset 0 again", first, second)
				}
			})
		}
	}
}
