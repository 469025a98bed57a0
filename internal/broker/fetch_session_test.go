package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/fetchsession"
)

// sessionFetch is a v17 consumer Fetch of the given partitions of topic
// id at offset 0 (or at offsets[p] when given), in session id at epoch.
func sessionFetch(id [16]byte, session, epoch int32, maxWait int32, parts []int32, offsets map[int32]int64) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version = 17
	r.ReplicaID, r.ReplicaState.ID = -1, -1
	r.SessionID, r.SessionEpoch = session, epoch
	r.MaxWaitMillis, r.MinBytes, r.MaxBytes = maxWait, 1, 1<<20
	if len(parts) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offsets[p], 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// answered lists the partitions a Fetch answer carries, with their
// record bytes.
func answered(resp *kmsg.FetchResponse) map[int32]int {
	out := map[int32]int{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out[rp.Partition] = len(rp.RecordBatches)
		}
	}
	return out
}

// TestFetchSessions walks a consumer's fetch session on a real broker:
// the session errors Kafka answers, a full fetch opening a session, idle
// incremental fetches that name, read and answer nothing, a produce that
// brings exactly its partition back, a duplicate epoch, and a session
// closed by forgetting everything.
func TestFetchSessions(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, ctx, c, "fs", 3, nil)
	id := tb.b.lookupTopic("fs").id
	fetch := func(r *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		resp, err := r.RequestWith(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	if resp := fetch(sessionFetch(id, 77, 3, 0, nil, nil)); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || resp.SessionID != 0 {
		t.Fatalf("unknown session: %v, session %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
	}
	resp := fetch(sessionFetch(id, 0, 0, 0, []int32{0, 1, 2}, nil))
	session := resp.SessionID
	if resp.ErrorCode != 0 || session == 0 || len(answered(resp)) != 3 {
		t.Fatalf("full fetch: %v, session %d, partitions %v", kerr.ErrorForCode(resp.ErrorCode), session, answered(resp))
	}
	reads := func() uint64 { return tb.b.fetches.Stats().Read[fetchsession.Incremental] }
	// The full fetch was answered without parking: its session watches
	// the partitions only from its answer on, so the next fetch reads
	// them once more (a change in between marked nothing); the ones
	// after it read nothing.
	for _, c := range []struct {
		epoch int32
		reads uint64
	}{{1, 3}, {2, 0}} {
		before := reads()
		resp = fetch(sessionFetch(id, session, c.epoch, 0, nil, nil))
		if resp.ErrorCode != 0 || resp.SessionID != session || len(resp.Topics) != 0 {
			t.Fatalf("idle incremental fetch: %v, session %d, %v", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID, answered(resp))
		}
		if n := reads() - before; n != c.reads {
			t.Fatalf("idle incremental fetch at epoch %d read %d partitions, want %d", c.epoch, n, c.reads)
		}
	}

	if err := c.ProduceSync(ctx, &kgo.Record{Topic: "fs", Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	resp = fetch(sessionFetch(id, session, 3, 0, nil, nil))
	if got := answered(resp); len(got) != 1 || got[1] == 0 {
		t.Fatalf("after a produce to partition 1 the answer carries %v", got)
	}
	if resp = fetch(sessionFetch(id, session, 3, 0, nil, nil)); resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("a repeated epoch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// The consumer moves past the record: named, read, and unchanged, so
	// not answered.
	resp = fetch(sessionFetch(id, session, 4, 0, []int32{1}, map[int32]int64{1: 1}))
	if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
		t.Fatalf("moving past the record: %v %v", kerr.ErrorForCode(resp.ErrorCode), answered(resp))
	}
	forget := sessionFetch(id, session, 5, 0, nil, nil)
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.TopicID, ft.Partitions = id, []int32{0, 1, 2}
	forget.ForgottenTopics = append(forget.ForgottenTopics, ft)
	if resp = fetch(forget); resp.ErrorCode != 0 || resp.SessionID != 0 {
		t.Fatalf("forgetting every partition: %v, session %d", kerr.ErrorForCode(resp.ErrorCode), resp.SessionID)
	}
	if st := tb.b.fetches.Stats(); st.Sessions != 0 {
		t.Fatalf("%d sessions left", st.Sessions)
	}
}

// TestFetchSessionSlots: with max.incremental.fetch.session.cache.slots
// 0 no session is opened; a full fetch is answered with session 0.
func TestFetchSessionSlots(t *testing.T) {
	tb := startBroker(t, t.TempDir(), func(cfg *Config) {
		st, err := config.NewBroker(map[string]string{config.NodeID: "1", config.FetchSessionCacheSlots: "0"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.NodeID, cfg.Settings = 1, st
	})
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "fs", 1, nil)
	resp, err := sessionFetch(tb.b.lookupTopic("fs").id, 0, 0, 0, []int32{0}, nil).RequestWith(ctx, c)
	if err != nil || resp.ErrorCode != 0 || resp.SessionID != 0 || len(answered(resp)) != 1 {
		t.Fatalf("full fetch without slots: %v %+v", err, resp)
	}
}

// TestParkedFetchRereadsOnlyWhatChanged: a fetch of 100 partitions
// parked below MinBytes reads the partition a produce changed when it is
// woken, not the 100 again; a session's parked fetch likewise.
func TestParkedFetchRereadsOnlyWhatChanged(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, ctx, c, "park", 100, nil)
	id := tb.b.lookupTopic("park").id
	all := make([]int32, 100)
	for i := range all {
		all[i] = int32(i)
	}
	for _, kind := range []fetchsession.Kind{fetchsession.Sessionless, fetchsession.Incremental} {
		t.Run(kind.String(), func(t *testing.T) {
			req := sessionFetch(id, 0, -1, 20_000, all, nil)
			if kind == fetchsession.Incremental {
				full, err := sessionFetch(id, 0, 0, 0, all, nil).RequestWith(ctx, c)
				if err != nil || full.SessionID == 0 {
					t.Fatalf("full fetch: %v %+v", err, full)
				}
				// Past everything produced so far, the session idle.
				offsets := map[int32]int64{}
				for _, rt := range full.Topics {
					for _, rp := range rt.Partitions {
						offsets[rp.Partition] = rp.HighWatermark
					}
				}
				named := sessionFetch(id, full.SessionID, 1, 0, all, offsets)
				if _, err := named.RequestWith(ctx, c); err != nil {
					t.Fatal(err)
				}
				req = sessionFetch(id, full.SessionID, 2, 20_000, nil, nil)
			}
			read := func() uint64 { return tb.b.fetches.Stats().Read[kind] }
			requests := func() uint64 { return tb.b.fetches.Stats().Requests[kind] }
			before, n := read(), requests()
			type result struct {
				resp *kmsg.FetchResponse
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := req.RequestWith(ctx, c)
				done <- result{resp, err}
			}()
			first := uint64(0) // what the request reads before it parks
			if kind == fetchsession.Sessionless {
				first = 100
			}
			eventually(t, 10*time.Second, func() error {
				if requests() == n || read()-before < first {
					return fmt.Errorf("fetch not admitted and read yet")
				}
				return nil
			})
			parked := read() - before
			if err := c.ProduceSync(ctx, &kgo.Record{Topic: "park", Partition: 42, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			var res result
			select {
			case res = <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the parked fetch was not woken by the produce")
			}
			if res.err != nil || answered(res.resp)[42] == 0 {
				t.Fatalf("woken fetch: %v %v", res.err, res.resp)
			}
			if kind == fetchsession.Incremental && len(answered(res.resp)) != 1 {
				t.Fatalf("incremental answer carries %v", answered(res.resp))
			}
			woken := read() - before - parked
			if woken < 1 || woken > 3 {
				t.Fatalf("%s fetch: %d partition reads before parking, %d after the produce; want the produced partition alone (1 to 3 reads)", kind, parked, woken)
			}
			t.Logf("%s: %d reads before parking, %d after the produce", kind, parked, woken)
		})
	}
}

// TestFollowersFetchInSessions: on a three-node cluster the followers'
// fetches are incremental once their sessions are open, and while
// nothing is produced they name no partition and their leader reads
// none; a produce is replicated (acks=all) through the same sessions.
func TestFollowersFetchInSessions(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	replicas := make([][]int32, 30)
	for i := range replicas {
		replicas[i] = []int32{1, 2, 3}
	}
	tc.createAssigned(t, ctx, c, "rep", replicas...)
	if err := c.ProduceSync(ctx, &kgo.Record{Topic: "rep", Partition: 7, Value: []byte("first")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	leader := tc.brokers[0].b
	st := func() fetchsession.Stats { return leader.fetches.Stats() }
	// Both followers' sessions are open and their fetches incremental.
	eventually(t, 20*time.Second, func() error {
		if s := st(); s.Sessions < 2 || s.Requests[fetchsession.Incremental] < 10 {
			return fmt.Errorf("sessions %d, incremental fetches %d", s.Sessions, s.Requests[fetchsession.Incremental])
		}
		return nil
	})
	// The first answers after the produce carry high watermark moves;
	// then nothing changes.
	settle := st().Requests[fetchsession.Incremental]
	eventually(t, 20*time.Second, func() error {
		if n := st().Requests[fetchsession.Incremental]; n < settle+2 {
			return fmt.Errorf("%d incremental fetches since", n-settle)
		}
		return nil
	})
	before := st()
	eventually(t, 20*time.Second, func() error {
		if n := st().Requests[fetchsession.Incremental] - before.Requests[fetchsession.Incremental]; n < 4 {
			return fmt.Errorf("%d idle fetches so far", n)
		}
		return nil
	})
	after := st()
	if named := after.Requested[fetchsession.Incremental] - before.Requested[fetchsession.Incremental]; named != 0 {
		t.Fatalf("idle followers' incremental fetches named %d partitions", named)
	}
	if read := after.Read[fetchsession.Incremental] - before.Read[fetchsession.Incremental]; read != 0 {
		t.Fatalf("the leader read %d partitions for idle followers", read)
	}
	if full := after.Requests[fetchsession.Full] - before.Requests[fetchsession.Full]; full != 0 {
		t.Fatalf("%d full fetches while idle", full)
	}
	if err := c.ProduceSync(ctx, &kgo.Record{Topic: "rep", Partition: 12, Value: []byte("second")}).FirstErr(); err != nil {
		t.Fatalf("acks=all through sessions: %v", err)
	}
}
