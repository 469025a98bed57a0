package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/replica"
)

// heldForAnHour is a follower fetch's MaxWait in these tests: an answer
// that depended on it would leave the test waiting for its deadline.
const heldForAnHour = int32(time.Hour / time.Millisecond)

// followerFetch is a Fetch as broker id's replica fetcher sends it for
// partition 0 of topic, held up to an hour.
func followerFetch(topicID [16]byte, id, epoch, lastEpoch int32, offset int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = replica.FetchVersion
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = id, id, -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = heldForAnHour, 1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.TopicID = topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.FetchOffset, fp.PartitionMaxBytes = epoch, lastEpoch, offset, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	return req
}

// ledByOneSeenByTwo starts two brokers and creates topic with one
// partition led by broker 1, replicated on broker 2; it returns broker
// 2's view of the partition once broker 2 knows its leader.
func ledByOneSeenByTwo(t *testing.T, topic string) (*testCluster, context.Context, *kgo.Client, [16]byte, *partition) {
	t.Helper()
	tc := startCluster(t, 2)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr))
	tc.createAssigned(t, ctx, c, topic, []int32{1, 2})
	b2 := tc.brokers[1].b
	p := b2.lookupTopic(topic).partitions[0]
	if err := b2.waitRegistry(ctx, func() bool { return p.leader() == 1 }); err != nil {
		t.Fatal(err)
	}
	return tc, ctx, c, topicIDOf(t, tc.brokers[0], topic), p
}

// TestFollowerFetchDivergingAnsweredAtOnce: a follower whose log diverges
// from the leader's gets its DivergingEpoch at once, not when the leader
// next appends (or MaxWait passes): it cannot truncate, and so cannot
// count towards the high watermark, until it has the answer.
func TestFollowerFetchDivergingAnsweredAtOnce(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr))
	tc.createAssigned(t, ctx, c, "diverging", []int32{1, 2})
	id := topicIDOf(t, tc.brokers[0], "diverging")
	p := tc.brokers[0].b.lookupTopic("diverging").partitions[0]
	if err := tc.brokers[0].b.waitRegistry(ctx, func() bool { return p.isLeader() }); err != nil {
		t.Fatal(err)
	}
	epoch := p.leaderEpoch()
	// Broker 2 claims records of the leader's epoch past the leader's log
	// end (empty).
	resp, err := followerFetch(id, 2, epoch, epoch, 10).RequestWith(ctx, c.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	fp := resp.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 || fp.DivergingEpoch.Epoch != epoch || fp.DivergingEpoch.EndOffset != 0 {
		t.Fatalf("answer: code %v, diverging epoch %+v", kerr.ErrorForCode(fp.ErrorCode), fp.DivergingEpoch)
	}
}

// TestFollowerFetchHeldUntilLeadershipApplied: a follower that learns of
// a new leader before the new leader itself does fetches from it in the
// new epoch; the new leader holds that fetch rather than refusing it
// (which would cost the follower a back-off) and serves it as soon as it
// applies its promotion. Here the follower is the old leader with a
// suffix the new leader does not have: its DivergingEpoch goes out on
// the promotion, not at the new leader's first append.
func TestFollowerFetchHeldUntilLeadershipApplied(t *testing.T) {
	tc, ctx, c, id, p := ledByOneSeenByTwo(t, "promoted")
	old := p.leaderEpoch()
	next := old + 1
	answered := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := followerFetch(id, 1, next, old, 10).RequestWith(ctx, c.Broker(2))
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	// Broker 2 must hold the fetch: it does not lead yet.
	select {
	case resp := <-answered:
		if resp != nil {
			t.Fatalf("answered before the promotion: code %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
		}
		t.FailNow()
	case <-time.After(200 * time.Millisecond):
	}
	// Leadership moves to broker 2.
	if err := tc.brokers[0].b.ControlledShutdown(ctx); err != nil {
		t.Fatalf("controlled shutdown: %v", err)
	}
	var resp *kmsg.FetchResponse
	select {
	case resp = <-answered:
	case <-ctx.Done():
		t.Fatal("the held fetch was not served after the promotion")
	}
	if resp == nil {
		t.FailNow()
	}
	if got := p.leaderEpoch(); got != next || p.leader() != 2 {
		t.Fatalf("after the move broker 2 knows leader %d epoch %d, want 2 and %d", p.leader(), got, next)
	}
	if fp := resp.Topics[0].Partitions[0]; fp.ErrorCode != 0 || fp.DivergingEpoch.Epoch != old || fp.DivergingEpoch.EndOffset != 0 {
		t.Fatalf("held fetch answered with %v, diverging epoch %+v, want epoch %d ending at 0", kerr.ErrorForCode(fp.ErrorCode), fp.DivergingEpoch, old)
	}
}

// TestHeldFetchAnsweredAtMaxWait: when the promotion does not come, the
// held fetch is answered at MaxWait with UNKNOWN_LEADER_EPOCH.
func TestHeldFetchAnsweredAtMaxWait(t *testing.T) {
	_, ctx, c, id, p := ledByOneSeenByTwo(t, "notyet")
	req := followerFetch(id, 1, p.leaderEpoch()+1, -1, 0)
	req.MaxWaitMillis = 50
	resp, err := req.RequestWith(ctx, c.Broker(2))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("answer %v, want UNKNOWN_LEADER_EPOCH", kerr.ErrorForCode(code))
	}
	// The same epoch as the broker's is not a pending leadership: refused
	// at once.
	req = followerFetch(id, 1, p.leaderEpoch(), -1, 0)
	resp, err = req.RequestWith(ctx, c.Broker(2))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("answer %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}
