package broker

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
	"weir/internal/server"
)

// BenchmarkFetch measures the Fetch handler in process (no network, no
// parking: MaxWait 0): a consumer's fetch of one partition holding
// records, and a follower's fetch of 1,000 partitions where nothing
// changed, which is what every replica.fetch.wait.max.ms of an idle
// follower costs its leader. Requests follow the session rules
// (fetchsession.Client): incremental ones when the broker keeps a
// session, full ones when it does not.
func BenchmarkFetch(b *testing.B) {
	b.Run("consumer/1-partition", func(b *testing.B) {
		tb := startBroker(b, b.TempDir(), nil)
		ctx := testCtx(b)
		c := newClient(b, tb.addr, kgo.DefaultProduceTopic("t"), kgo.AllowAutoTopicCreation())
		for i := range 100 {
			if err := c.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				b.Fatal(err)
			}
		}
		t := tb.b.lookupTopic("t")
		benchFetch(b, tb.b, -1, -1, []fetchTarget{{Topic: t.id}}, 0)
	})
	b.Run("follower/1000-idle", func(b *testing.B) {
		tc := startCluster(b, 3)
		ctx := testCtx(b)
		c := newClient(b, tc.brokers[0].addr)
		replicas := make([][]int32, 1000)
		for i := range replicas {
			replicas[i] = []int32{1, 2, 3}
		}
		tc.createAssigned(b, ctx, c, "idle", replicas...)
		leader := tc.brokers[0].b
		t := leader.lookupTopic("idle")
		if err := leader.waitRegistry(ctx, func() bool {
			for _, p := range t.partitions {
				if !p.isLeader() {
					return false
				}
			}
			return true
		}); err != nil {
			b.Fatal(err)
		}
		br, _ := leader.image().Broker(2)
		targets := make([]fetchTarget, len(replicas))
		for i := range targets {
			targets[i] = fetchTarget{Topic: t.id, Partition: int32(i)}
		}
		benchFetch(b, leader, 2, br.Epoch, targets, 0)
	})
}

type fetchTarget = fetchsession.Key[[16]byte]

// benchFetch sends b.N Fetch requests for targets (as replica, with
// its broker epoch, or as a consumer with replica -1) straight to the
// broker's handler, each answered at once.
func benchFetch(b *testing.B, br *Broker, replica int32, epoch int64, targets []fetchTarget, offset int64) {
	cl := fetchsession.NewClient[[16]byte, struct{}]()
	for _, t := range targets {
		cl.Want(t, fetchsession.PartitionData{FetchOffset: offset, LogStartOffset: -1, MaxBytes: 1 << 20, LeaderEpoch: -1, LastFetchedEpoch: -1})
	}
	ctx := context.Background()
	fetch := func() {
		pl := cl.Next()
		r := kmsg.NewPtrFetchRequest()
		r.Version = 17
		r.ReplicaID, r.ReplicaState.ID, r.ReplicaState.Epoch = replica, replica, epoch
		r.MaxBytes, r.MinBytes, r.MaxWaitMillis = 50<<20, 1, 0
		rb := fetchsession.NewRequestBuilder(r, pl)
		for _, k := range pl.Send {
			rb.Add(fetchsession.TopicRef{ID: k.Topic}, k.Partition, cl.Data(cl.Get(k)))
		}
		reply := br.Serve(ctx, &server.Request{Key: 1, Version: 17, Body: r})
		if !server.WaitReply(reply, 5*time.Second) {
			b.Fatal("fetch not answered with MaxWait 0")
		}
		fr := kmsg.NewPtrFetchResponse()
		fr.Version = 17
		if err := fr.ReadFrom(server.FlattenBody(b, server.ReplyBody(reply))); err != nil {
			b.Fatal(err)
		}
		var keys []fetchTarget
		for _, rt := range fr.Topics {
			for _, rp := range rt.Partitions {
				keys = append(keys, fetchTarget{Topic: rt.TopicID, Partition: rp.Partition})
			}
		}
		cl.Answered(pl, fr.ErrorCode, fr.SessionID, keys)
	}
	fetch()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		fetch()
	}
}
