package client

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
)

func TestWithLeadersGuards(t *testing.T) {
	base := &metadata{
		brokers: map[int32]broker{0: {id: 0, host: "a", port: 1}, 1: {id: 1, host: "b", port: 1}},
		topics: map[string]*topicMeta{"t": {name: "t", partitions: []partitionMeta{
			{leader: 0, epoch: 5}, {leader: 1, epoch: 5},
		}}},
	}
	ep2 := nodeEndpoint{id: 2, host: "c", port: 3}
	tests := []struct {
		name       string
		hint       leaderHint
		eps        []nodeEndpoint
		applied    int
		wantLeader int32
		wantEpoch  int32
	}{
		{"newer epoch with endpoint", leaderHint{"t", 0, 2, 6}, []nodeEndpoint{ep2}, 1, 2, 6},
		{"newer epoch, known broker, no endpoint", leaderHint{"t", 0, 1, 6}, nil, 1, 1, 6},
		{"leader without endpoint", leaderHint{"t", 0, 2, 6}, nil, 0, 0, 5},
		{"same epoch", leaderHint{"t", 0, 2, 5}, []nodeEndpoint{ep2}, 0, 0, 5},
		{"older epoch", leaderHint{"t", 0, 2, 4}, []nodeEndpoint{ep2}, 0, 0, 5},
		{"unknown topic", leaderHint{"u", 0, 2, 6}, []nodeEndpoint{ep2}, 0, 0, 5},
		{"unknown partition", leaderHint{"t", 9, 2, 6}, []nodeEndpoint{ep2}, 0, 0, 5},
		{"no leader", leaderHint{"t", 0, -1, 6}, []nodeEndpoint{ep2}, 0, 0, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, applied := base.withLeaders([]leaderHint{tt.hint}, tt.eps)
			if applied != tt.applied {
				t.Fatalf("applied %d, want %d", applied, tt.applied)
			}
			l, e := n.leader("t", 0)
			if l != tt.wantLeader || e != tt.wantEpoch {
				t.Fatalf("partition 0 led by %d at epoch %d, want %d at %d", l, e, tt.wantLeader, tt.wantEpoch)
			}
			if applied > 0 {
				if _, ok := n.brokers[tt.wantLeader]; !ok {
					t.Fatalf("leader %d has no address after the update", tt.wantLeader)
				}
				if n.topics["t"].view.Leader(0) != tt.wantLeader {
					t.Fatal("partitioner view not updated")
				}
				if l, _ := base.leader("t", 0); l != 0 {
					t.Fatal("the old snapshot was modified")
				}
			}
		})
	}
}

// TestKIP951ProduceRetry moves partition 0's leader from node 0 to node 1
// behind the producer's back. Node 0 answers NOT_LEADER_OR_FOLLOWER; what the
// producer does next depends on the hint in that answer.
func TestKIP951ProduceRetry(t *testing.T) {
	type hintKind int
	const (
		noHint hintKind = iota
		goodHint
		staleEpoch
		noEndpoint
	)
	tests := []struct {
		name string
		hint hintKind
		// failOnNewLeader makes node 1 reject the first attempt there with a
		// retriable error, so the retry after the immediate one must back off.
		failOnNewLeader bool
		minLatency      time.Duration
		maxLatency      time.Duration
		hintsApplied    int64
	}{
		{"hint retries at once", goodHint, false, 0, 50 * time.Millisecond, 1},
		{"no hint waits for backoff and metadata", noHint, false, 800 * time.Millisecond, 3 * time.Second, 0},
		{"stale epoch is ignored", staleEpoch, false, 800 * time.Millisecond, 3 * time.Second, 0},
		{"leader without endpoint is ignored", noEndpoint, false, 800 * time.Millisecond, 3 * time.Second, 0},
		{"second retry at the same epoch backs off", goodHint, true, 800 * time.Millisecond, 3 * time.Second, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
			sim := newSimCluster(clock, "t", []*simBroker{
				{id: 0, latency: 2 * time.Millisecond}, {id: 1, latency: 2 * time.Millisecond}, {id: 2, latency: 2 * time.Millisecond},
			})
			failed := false
			sim.hook = func(b *simBroker, _ *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
				rp := &resp.Topics[0].Partitions[0]
				if b.id == 1 && tt.failOnNewLeader && !failed {
					failed = true
					rp.ErrorCode = 19 // NOT_ENOUGH_REPLICAS, retriable
					return
				}
				if rp.ErrorCode != 6 {
					return
				}
				switch tt.hint {
				case goodHint:
					rp.CurrentLeader = kmsg.ProduceResponseTopicPartitionCurrentLeader{LeaderID: 1, LeaderEpoch: 2}
					resp.Brokers = []kmsg.ProduceResponseBroker{{NodeID: 1, Host: "sim", Port: 9093}}
				case staleEpoch:
					rp.CurrentLeader = kmsg.ProduceResponseTopicPartitionCurrentLeader{LeaderID: 1, LeaderEpoch: 1}
					resp.Brokers = []kmsg.ProduceResponseBroker{{NodeID: 1, Host: "sim", Port: 9093}}
				case noEndpoint:
					rp.CurrentLeader = kmsg.ProduceResponseTopicPartitionCurrentLeader{LeaderID: 7, LeaderEpoch: 2}
				}
			}
			p, err := NewProducer(map[string]string{
				"bootstrap.servers": "sim:9092", "retry.backoff.ms": "1000", "retry.backoff.max.ms": "1000", "linger.ms": "0",
			}, sim.options(7)...)
			if err != nil {
				t.Fatal(err)
			}
			defer p.cl.close()
			ctx := context.Background()
			// Learn the layout, then move the leader behind the producer's back.
			if _, err := p.cl.waitTopic(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			sim.leaders[0], sim.epochs[0] = 1, 2
			start := clock.Now()
			var got time.Duration
			var gotErr error
			done := false
			p.Send(ctx, &Record{Topic: "t", Partition: PartitionOf(0), Value: []byte("x")}, func(md RecordMetadata, err error) {
				got, gotErr, done = clock.Now().Sub(start), err, true
			})
			for i := 0; i < 10_000 && !done; i++ {
				p.runOnce(clock.Now())
				clock.advance(time.Millisecond)
				sim.deliver(clock.Now())
			}
			if !done || gotErr != nil {
				t.Fatalf("record not delivered: done=%v err=%v", done, gotErr)
			}
			if got < tt.minLatency || got > tt.maxLatency {
				t.Fatalf("delivered after %v, want within [%v, %v]", got, tt.minLatency, tt.maxLatency)
			}
			if h := p.Metrics().LeaderHints; h != tt.hintsApplied {
				t.Fatalf("leader hints applied: %d, want %d", h, tt.hintsApplied)
			}
		})
	}
}

// TestKIP951Fetch: the old leader answers a fetch with NOT_LEADER_OR_FOLLOWER
// and a hint; the consumer fetches from the new leader without a metadata
// round trip.
func TestKIP951Fetch(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	sim := newSimCluster(clock, "t", []*simBroker{{id: 0}, {id: 1}, {id: 2}})
	b := records.NewBuilder(records.None, 1<<20, 1)
	for i := 0; i < 3; i++ {
		b.TryAppend(1000, nil, []byte{byte('a' + i)}, nil)
	}
	batch, _, err := b.Build(nil, records.NoProducer, records.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fetchedFrom []int32
	sim.fetch = func(node int32, req *kmsg.FetchRequest) *kmsg.FetchResponse {
		fetchedFrom = append(fetchedFrom, node)
		resp := kmsg.NewPtrFetchResponse()
		resp.SetVersion(req.GetVersion())
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = 0
		if node == 0 {
			rp.ErrorCode = 6
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = 1, 2
			resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "sim", Port: 9093}}
		} else {
			rp.HighWatermark = 3
			rp.RecordBatches = batch
		}
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp
	}
	c, err := NewConsumer(map[string]string{"bootstrap.servers": "sim:9092"}, sim.options(1)...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Assign([]TopicPartition{{"t", 0}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cl.waitTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	calls := sim.metadataCalls
	sim.leaders[0], sim.epochs[0] = 1, 2 // moved; the consumer's metadata still says node 0
	if err := c.Seek(TopicPartition{"t", 0}, 0); err != nil {
		t.Fatal(err)
	}
	recs, err := c.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || string(recs[2].Value) != "c" || recs[2].Offset != 2 {
		t.Fatalf("records %+v", recs)
	}
	if len(fetchedFrom) != 2 || fetchedFrom[0] != 0 || fetchedFrom[1] != 1 {
		t.Fatalf("fetched from %v, want [0 1]", fetchedFrom)
	}
	if sim.metadataCalls != calls {
		t.Fatalf("%d metadata requests after the move, want none", sim.metadataCalls-calls)
	}
}
