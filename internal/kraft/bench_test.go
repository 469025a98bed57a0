package kraft

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// The benchmarks run whole clusters in one process (three raft nodes,
// each with a Kafka listener and a broker lifecycle talking to the
// controller over the Kafka protocol on 127.0.0.1). They report the
// measured time as ns/op and more as custom metrics; doc.go records a
// run.

// benchCluster starts three voters with brokers and waits until every
// broker is unfenced.
func benchCluster(b *testing.B) *testCluster {
	b.Helper()
	c := startCluster(b, 3, 0, nil)
	for id := int32(1); id <= 3; id++ {
		c.startBroker(id)
	}
	for id := int32(1); id <= 3; id++ {
		waitUnfenced(b, c.nodes[id].life)
	}
	return c
}

func waitUnfenced(tb testing.TB, life *BrokerLifecycle) {
	tb.Helper()
	select {
	case <-life.Unfenced():
	case <-time.After(60 * time.Second):
		tb.Fatalf("broker not unfenced: %v", life.State())
	}
}

// createMany creates topics of 50 partitions, in requests of at most
// perRequest topics. A request whose controller changed before it was
// answered is retried by the client and may find its topics created:
// TOPIC_ALREADY_EXISTS counts as created if the image agrees, and the
// number of such topics is returned.
func createMany(tb testing.TB, cl ControllerClient, img func() *metadata.Image, prefix string, topics, perRequest int, rf int16) (retried int) {
	tb.Helper()
	for done := 0; done < topics; done += perRequest {
		req := kmsg.NewPtrCreateTopicsRequest()
		for i := range min(perRequest, topics-done) {
			t := kmsg.NewCreateTopicsRequestTopic()
			t.Topic, t.NumPartitions, t.ReplicationFactor = fmt.Sprintf("%s%03d-%04d", prefix, done/perRequest, i), 50, rf
			req.Topics = append(req.Topics, t)
		}
		resp, err := cl.Admin(ctxTimeout(tb, 120*time.Second), req)
		if err != nil {
			tb.Fatal(err)
		}
		for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
			switch t.ErrorCode {
			case 0:
			case kerr.TopicAlreadyExists.Code:
				if tp, ok := img().TopicByName(t.Topic); !ok || tp.NumPartitions() != 50 {
					tb.Fatalf("%s: TOPIC_ALREADY_EXISTS but not in the image", t.Topic)
				}
				retried++
			default:
				tb.Fatalf("create %s: %v", t.Topic, kerr.ErrorForCode(t.ErrorCode))
			}
		}
	}
	return retried
}

// controllersStarted sums the controllers the live nodes have run.
func (c *testCluster) controllersStarted() int64 {
	var n int64
	for _, tn := range c.live() {
		n += tn.node.ControllersStarted()
	}
	return n
}

// createRotated creates partitions/50 topics of 50 partitions whose
// replica lists rotate over brokers 1..rf, so that each broker leads
// exactly a 1/rf share, in requests of at most 100,000 partitions.
func createRotated(tb testing.TB, cl ControllerClient, partitions, rf int) {
	tb.Helper()
	var req *kmsg.CreateTopicsRequest
	n := 0
	for ti := range partitions / 50 {
		if req == nil {
			req = kmsg.NewPtrCreateTopicsRequest()
		}
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = fmt.Sprintf("r%05d", ti), -1, -1
		for p := range 50 {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition = int32(p)
			for r := range rf {
				a.Replicas = append(a.Replicas, int32((n+r)%rf)+1)
			}
			n++
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, t)
		if len(req.Topics) == 2000 || ti == partitions/50-1 {
			mustOK(tb, cl, req)
			req = nil
		}
	}
}

// restoreISRs sends, as each partition leader would once its followers
// caught up, AlterPartition requests putting every replica back in the
// ISR (there is no replication at this layer).
func restoreISRs(tb testing.TB, cl ControllerClient, img *metadata.Image) {
	tb.Helper()
	byLeader := map[int32]*kmsg.AlterPartitionRequest{}
	img.EachTopic(func(tp *metadata.Topic) bool {
		rt := kmsg.NewAlterPartitionRequestTopic()
		rt.TopicID = tp.ID()
		tp.EachPartition(func(p int32, s metadata.Partition) bool {
			if len(s.ISR()) == len(s.Replicas()) || s.Leader() < 0 {
				return true
			}
			req := byLeader[s.Leader()]
			if req == nil {
				b, _ := img.Broker(s.Leader())
				req = kmsg.NewPtrAlterPartitionRequest()
				req.Version, req.BrokerID, req.BrokerEpoch = 2, b.ID, b.Epoch
				byLeader[s.Leader()] = req
			}
			if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != tp.ID() {
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewAlterPartitionRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p, s.LeaderEpoch(), s.PartitionEpoch()
			rp.NewISR = slices.Clone(s.Replicas())
			last := &req.Topics[len(req.Topics)-1]
			last.Partitions = append(last.Partitions, rp)
			return true
		})
		return true
	})
	for _, req := range byLeader {
		resp, err := cl.Admin(ctxTimeout(tb, 60*time.Second), req)
		if err != nil {
			tb.Fatal(err)
		}
		r := resp.(*kmsg.AlterPartitionResponse)
		if r.ErrorCode != 0 {
			tb.Fatalf("AlterPartition: %d", r.ErrorCode)
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					tb.Fatalf("AlterPartition partition %d: %d", p.Partition, p.ErrorCode)
				}
			}
		}
	}
}

func electPreferred(tb testing.TB, cl ControllerClient) {
	tb.Helper()
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 0
	req.Topics = nil // every partition
	resp, err := cl.Admin(ctxTimeout(tb, 60*time.Second), req)
	if err != nil {
		tb.Fatal(err)
	}
	for _, t := range resp.(*kmsg.ElectLeadersResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				tb.Fatalf("preferred election %s-%d: %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
}

// BenchmarkControlledShutdown: a broker leading a third of the
// partitions (RF 3 on three brokers: 10,000 of 30,000, 33,333 of
// 100,000) shuts down. One batch changes every partition: its leader
// moves away from a third of them, and it leaves the ISR of the rest.
// ns/op is the time from the request to the controller letting the
// broker go (every active broker has applied the batch and the broker
// is fenced).
func BenchmarkControlledShutdown(b *testing.B) {
	for _, parts := range []int{30_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			benchShutdown(b, parts)
		})
	}
}

func benchShutdown(b *testing.B, partitions int) {
	b.ReportAllocs()
	c := benchCluster(b)
	lead := c.leader(10 * time.Second)
	createRotated(b, lead.client, partitions, 3)
	var victim int32
	for id := int32(1); id <= 3; id++ {
		if id != lead.id {
			victim = id
			break
		}
	}
	var batches, moved int
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		img := c.converged(60*time.Second, lead.node)
		led := leaderships(img, victim)
		if led < partitions/3 || led > partitions/3+1 {
			b.Fatalf("broker %d leads %d partitions", victim, led)
		}
		sub := lead.node.FSM().Subscribe(1 << 20)
		sub.Drain()
		b.StartTimer()
		if err := c.nodes[victim].life.Shutdown(ctxTimeout(b, 60*time.Second)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		n, changes := batchCounter{sub}.leaderBatches()
		sub.Close()
		if n != 1 || changes != led {
			b.Fatalf("%d leaderships moved in %d batches", changes, n)
		}
		batches += n
		moved += changes
		if i == b.N-1 {
			break
		}
		// Back to the start: the broker restarts, the leaders take it
		// back into their ISRs, a preferred election returns its
		// leaderships.
		waitUnfenced(b, c.startBroker(victim))
		restoreISRs(b, lead.client, c.converged(60*time.Second, lead.node))
		electPreferred(b, lead.client)
		b.StartTimer()
	}
	b.ReportMetric(float64(moved)/float64(b.N), "leaderships/op")
	b.ReportMetric(float64(batches)/float64(b.N), "batches/op")
}

// BenchmarkFailover: three voters hold 100,000 partitions (RF 1, created
// through the controller). ns/op is the time from killing the raft
// leader (Close) to the first leadership change accepted by the new
// controller: a preferred election sent through a surviving broker's
// Kafka client, which follows the raft leader. controller-ms is when a
// survivor's controller became active.
func BenchmarkFailover(b *testing.B) {
	for _, parts := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			benchFailover(b, parts)
		})
	}
}

func benchFailover(b *testing.B, partitions int) {
	b.ReportAllocs()
	c := benchCluster(b)
	lead := c.leader(10 * time.Second)
	createMany(b, lead.client, lead.node.Image, "f", partitions/50, 2000, 1)
	var activeTotal time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		lead = c.leader(30 * time.Second)
		var alive []int32
		for id := int32(1); id <= 3; id++ {
			if id != lead.id {
				alive = append(alive, id)
			}
		}
		x, y := alive[0], alive[1]
		probeName := fmt.Sprintf("probe%d", i)
		probe := kmsg.NewPtrCreateTopicsRequest()
		pt := kmsg.NewCreateTopicsRequestTopic()
		pt.Topic, pt.NumPartitions, pt.ReplicationFactor = probeName, -1, -1
		pa := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		pa.Replicas = []int32{x, y}
		pt.ReplicaAssignment = append(pt.ReplicaAssignment, pa)
		probe.Topics = append(probe.Topics, pt)
		mustOK(b, lead.client, probe)
		reorder := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = probeName
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = []int32{y, x}
		rt.Partitions = append(rt.Partitions, rp)
		reorder.Topics = append(reorder.Topics, rt)
		mustOK(b, lead.client, reorder)
		c.converged(60*time.Second, lead.node)
		elect := kmsg.NewPtrElectLeadersRequest()
		et := kmsg.NewElectLeadersRequestTopic()
		et.Topic, et.Partitions = probeName, []int32{0}
		elect.Topics = append(elect.Topics, et)
		killed := lead.id
		survivors := []*Node{c.nodes[x].node, c.nodes[y].node}
		active := make(chan time.Duration, 1)
		ctx, cancel := context.WithCancel(context.Background())
		go watchController(ctx, survivors, active)

		b.StartTimer()
		start := time.Now()
		c.kill(killed)
		resp, err := c.nodes[x].client.Admin(ctxTimeout(b, 60*time.Second), elect)
		b.StopTimer()
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if er := resp.(*kmsg.ElectLeadersResponse); er.ErrorCode != 0 || er.Topics[0].Partitions[0].ErrorCode != 0 {
			b.Fatalf("election after failover: %+v", er)
		}
		select {
		case d := <-active:
			activeTotal += d
		default:
			activeTotal += time.Since(start)
		}

		// The killed node restarts: the new controller fences its old
		// registration (its owner knows it died), the node catches up
		// and its broker registers again.
		eventually(b, 60*time.Second, "the dead broker fenced", func() bool {
			a, err := c.leader(30 * time.Second).node.Controller()
			if err == nil {
				_, err = a.FenceBroker(ctxTimeout(b, 60*time.Second), killed, -1)
			}
			return err == nil
		})
		c.open(c.nodes[killed])
		waitUnfenced(b, c.startBroker(killed))
		b.StartTimer()
	}
	b.ReportMetric(float64(activeTotal.Milliseconds())/float64(b.N), "controller-ms")
}

// imageBytes is the heap an image holds: it is written as a snapshot and
// loaded back while the heap is measured (the median of three loads).
func imageBytes(tb testing.TB, img *metadata.Image) float64 {
	tb.Helper()
	var buf bytes.Buffer
	if err := metadata.WriteSnapshot(&buf, img); err != nil {
		tb.Fatal(err)
	}
	var sizes []float64
	for range 3 {
		before := liveHeap()
		loaded, err := metadata.ReadSnapshot(bytes.NewReader(buf.Bytes()))
		if err != nil {
			tb.Fatal(err)
		}
		after := liveHeap()
		runtime.KeepAlive(loaded)
		sizes = append(sizes, float64(after-before))
	}
	slices.Sort(sizes)
	return sizes[1]
}

// liveHeap is the heap in use after two collections (the second clears
// what the first left in sync.Pool victim caches).
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// watchController reports how long after its start one of nodes runs an
// active controller.
func watchController(ctx context.Context, nodes []*Node, out chan<- time.Duration) {
	start := time.Now()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		for _, n := range nodes {
			if _, err := n.Controller(); err == nil {
				out <- time.Since(start)
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// BenchmarkCreatePartitions: a fresh three-node cluster creates
// 100,000 partitions (RF 1, 2,000 topics of 50) through the controller,
// in requests of perRequest topics. ns/op is until the last response;
// all-ms until every node's image holds them; B/partition is the heap
// growth per partition per node (three images, plus buffers raft and the
// log keep for the largest entries), image-B/partition the cost of one
// image alone (loaded again from a snapshot).
func BenchmarkCreatePartitions(b *testing.B) {
	for _, tc := range []struct{ partitions, perRequest int }{{100_000, 2000}, {100_000, 20}, {1_000_000, 200}} {
		b.Run(fmt.Sprintf("partitions=%d/topics-per-request=%d", tc.partitions, tc.perRequest), func(b *testing.B) {
			benchCreate(b, tc.partitions, tc.perRequest)
		})
	}
}

func benchCreate(b *testing.B, partitions, perRequest int) {
	b.ReportAllocs()
	var allTotal time.Duration
	var heapPer, imagePer float64
	var retried int
	var changes int64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		c := benchCluster(b)
		lead := c.leader(10 * time.Second)
		before := liveHeap()
		controllers := c.controllersStarted()
		b.StartTimer()
		start := time.Now()
		retried += createMany(b, lead.client, lead.node.Image, "c", partitions/50, perRequest, 1)
		b.StopTimer()
		changes += c.controllersStarted() - controllers
		img := c.converged(120*time.Second, lead.node)
		allTotal += time.Since(start)
		if img.NumPartitions() != partitions {
			b.Fatalf("%d partitions", img.NumPartitions())
		}
		heapPer += float64(liveHeap()-before) / float64(partitions*3)
		c.close()
		imagePer += imageBytes(b, img) / float64(partitions)
	}
	b.ReportMetric(float64(allTotal.Milliseconds())/float64(b.N), "all-ms")
	b.ReportMetric(heapPer/float64(b.N), "B/partition")
	b.ReportMetric(imagePer/float64(b.N), "image-B/partition")
	b.ReportMetric(float64(changes)/float64(b.N), "controller-changes")
	b.ReportMetric(float64(retried)/float64(b.N), "retried-topics")
}
