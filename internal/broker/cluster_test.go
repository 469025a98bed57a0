package broker

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/kraft"
	wlog "weir/internal/log"
	"weir/internal/quorum"
	"weir/internal/server"
	"weir/internal/testport"
)

// freePorts picks n distinct ports on 127.0.0.1 that were free a moment
// ago, from below the kernel's ephemeral range (see internal/testport).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		_, port, err := net.SplitHostPort(testport.Addr(t))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports
}

// testCluster is n brokers in this process, each with its own raft
// transport and Kafka listener on 127.0.0.1, all voters.
type testCluster struct {
	brokers []*testBroker
}

func startCluster(t testing.TB, n int, mutate ...func(*Config)) *testCluster {
	t.Helper()
	return startSecureCluster(t, n, nil, mutate...)
}

// startSecureCluster starts a cluster whose listeners have sec as their
// security (nil: plain TCP).
func startSecureCluster(t testing.TB, n int, sec server.Security, mutate ...func(*Config)) *testCluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	var voters []quorum.Peer
	for i := range n {
		voters = append(voters, quorum.Peer{ID: int32(i + 1), Addr: fmt.Sprintf("127.0.0.1:%d", ports[n+i])})
	}
	tc := &testCluster{}
	done := make(chan error, n)
	for i := range n {
		cfg := DefaultConfig()
		cfg.NodeID = int32(i + 1)
		cfg.DataDir = t.TempDir()
		cfg.Group.NoInitialRebalanceDelay = true
		cfg.Quorum = QuorumConfig{RaftAddr: voters[i].Addr, Voters: voters}
		for _, m := range mutate {
			m(&cfg)
		}
		b, err := New(cfg)
		if err != nil {
			t.Fatalf("broker %d: %v", i+1, err)
		}
		srv, err := server.New(server.Config{Listeners: []server.Listener{{Name: "PLAINTEXT", Addr: fmt.Sprintf("127.0.0.1:%d", ports[i]), Security: sec}},
			Dispatcher: b})
		if err != nil {
			b.Close()
			t.Fatal(err)
		}
		b.SetAdvertised(srv.Addr())
		tb := &testBroker{b: b, srv: srv, addr: srv.Addr().String(), dir: cfg.DataDir, done: make(chan error, 1)}
		go func() { tb.done <- srv.Serve(context.Background()) }()
		t.Cleanup(tb.stop)
		tc.brokers = append(tc.brokers, tb)
		go func() { done <- b.Start(context.Background()) }()
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatalf("start: %v", err)
		}
	}
	// Each node waits in Start only for its own unfencing to reach its
	// own image; a client's first Metadata may go to any node, so wait
	// until every node lists every other as unfenced too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tb := range tc.brokers {
		if err := tb.b.waitRegistry(ctx, func() bool {
			for id := range int32(n) {
				if br, ok := tb.b.image().Broker(id + 1); !ok || br.Fenced {
					return false
				}
			}
			return true
		}); err != nil {
			t.Fatalf("node %d never saw all %d nodes unfenced: %v", tb.b.cfg.NodeID, n, err)
		}
	}
	return tc
}

// createAssigned creates a topic with one partition per replica list
// and waits until every broker's registry has it.
func (tc *testCluster) createAssigned(t testing.TB, ctx context.Context, c *kgo.Client, name string, replicas ...[]int32) {
	t.Helper()
	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	for i, r := range replicas {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	create.Topics = append(create.Topics, rt)
	if cr := request[*kmsg.CreateTopicsResponse](t, ctx, c, create); cr.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v", name, kerr.ErrorForCode(cr.Topics[0].ErrorCode))
	}
	for _, tb := range tc.brokers {
		if err := tb.b.waitRegistry(ctx, func() bool { return tb.b.lookupTopic(name) != nil }); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaderHints: a Produce or Fetch sent to a replica that does not
// lead carries KIP-951's CurrentLeader and the leader's endpoint, unless
// weir.leader.hints.enable is false.
func TestLeaderHints(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr))
	// Both brokers know the topic before the follower is asked.
	tc.createAssigned(t, ctx, c, "hints", []int32{1, 2})
	// Every broker describes the partition as the image holds it.
	for _, id := range []int32{1, 2} {
		dreq := kmsg.NewPtrDescribeTopicPartitionsRequest()
		dt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		dt.Topic = "hints"
		dreq.Topics = append(dreq.Topics, dt)
		dresp, err := dreq.RequestWith(ctx, c.Broker(int(id)))
		if err != nil {
			t.Fatal(err)
		}
		dp := dresp.Topics[0].Partitions[0]
		if dp.LeaderID != 1 || !slices.Equal(dp.Replicas, []int32{1, 2}) || len(dp.ISR) != 2 {
			t.Fatalf("broker %d describes the partition as leader %d replicas %v isr %v, want leader 1 replicas [1 2]", id, dp.LeaderID, dp.Replicas, dp.ISR)
		}
	}
	follower := c.Broker(2)
	produce := func() *kmsg.ProduceResponse {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 5000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic, pt.TopicID = "hints", topicIDOf(t, tc.brokers[0], "hints")
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = oneBatch(t)
		pt.Partitions = append(pt.Partitions, pp)
		req.Topics = append(req.Topics, pt)
		resp, err := req.RequestWith(ctx, follower)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	fetch := func() *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 0, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.TopicID = topicIDOf(t, tc.brokers[0], "hints")
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = -1, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, follower)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	pr := produce()
	sp := pr.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != 1 || sp.CurrentLeader.LeaderEpoch < 0 {
		t.Fatalf("produce to the follower: code %v, current leader %+v", kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader)
	}
	if len(pr.Brokers) != 1 || pr.Brokers[0].NodeID != 1 || fmt.Sprintf("%s:%d", pr.Brokers[0].Host, pr.Brokers[0].Port) != tc.brokers[0].addr {
		t.Fatalf("produce hint endpoints %+v, want node 1 at %s", pr.Brokers, tc.brokers[0].addr)
	}
	fr := fetch()
	fp := fr.Topics[0].Partitions[0]
	if fp.ErrorCode != kerr.NotLeaderForPartition.Code || fp.CurrentLeader.LeaderID != 1 {
		t.Fatalf("fetch from the follower: code %v, current leader %+v", kerr.ErrorForCode(fp.ErrorCode), fp.CurrentLeader)
	}
	if len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != 1 {
		t.Fatalf("fetch hint endpoints %+v, want node 1", fr.Brokers)
	}

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "weir.leader.hints.enable", kmsg.StringPtr("false")
	res.Configs = append(res.Configs, cfg)
	alter.Resources = append(alter.Resources, res)
	ar := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, c, alter)
	if ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("disable hints: %v", kerr.ErrorForCode(ar.Resources[0].ErrorCode))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pr = produce()
		sp = pr.Topics[0].Partitions[0]
		if sp.CurrentLeader.LeaderID == -1 && len(pr.Brokers) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hints still given after weir.leader.hints.enable=false: %+v %+v", sp.CurrentLeader, pr.Brokers)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to the follower without hints: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
}

// oneBatch is one uncompressed record batch without a producer id.
func oneBatch(t testing.TB) []byte {
	t.Helper()
	var bb wlog.BatchBuilder
	now := time.Now().UnixMilli()
	bb.Reset(now)
	bb.Add(now, nil, []byte("v"), nil)
	return append([]byte(nil), bb.Build()...)
}

// TestDeadBrokerFencedWithoutWaitingForItsSession: with a session timeout
// of a minute, a broker whose listener is gone is still fenced (its
// leaderships move) within seconds, by the controller's probe.
func TestDeadBrokerFencedWithoutWaitingForItsSession(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.Quorum.SessionTimeout = time.Minute })
	ctx := testCtx(t)
	ctl := tc.brokers[0].b.node.Leader()
	victim := ctl%3 + 1 // not the controller's node
	tc.brokers[victim-1].stop()
	live := tc.brokers[ctl-1].b
	deadline := time.Now().Add(20 * time.Second)
	for {
		br, ok := live.node.Image().Broker(victim)
		if ok && br.Fenced {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("broker %d not fenced 20 s after its listener closed (session timeout 1 min)", victim)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShareFetchWaitElsewhere: the node tells the share-group service
// which topics have partitions led by other brokers and how long
// weir.share.fetch.elsewhere.wait.ms lets an empty record_limit fetch on
// them wait (-1: off); sharegroup's TestMaxWait covers the rule itself.
func TestShareFetchWaitElsewhere(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr))
	tc.createAssigned(t, ctx, c, "spread", []int32{1}, []int32{2})
	tc.createAssigned(t, ctx, c, "local", []int32{1}, []int32{1})
	b := tc.brokers[0].b
	h := shareGroupHost{b}
	if h.LedElsewhere(b.lookupTopic("local").id) {
		t.Error("a topic led here only is said to be led elsewhere")
	}
	if !h.LedElsewhere(b.lookupTopic("spread").id) {
		t.Error("a topic with a partition led by node 2 is not said to be led elsewhere")
	}
	if got := h.ElsewhereWait(); got != 10*time.Millisecond {
		t.Errorf("default wait %v, want 10ms", got)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = "weir.share.fetch.elsewhere.wait.ms", kmsg.StringPtr("-1")
	res.Configs = append(res.Configs, cfg)
	alter.Resources = append(alter.Resources, res)
	if ar := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, c, alter); ar.Resources[0].ErrorCode != 0 {
		t.Fatalf("turn off: %v", kerr.ErrorForCode(ar.Resources[0].ErrorCode))
	}
	if err := b.waitRegistry(ctx, func() bool { return h.ElsewhereWait() < 0 }); err != nil {
		t.Fatalf("-1 did not reach the share service: %v", err)
	}
}

// TestForwardError: a forwarded admin request no controller decided gets
// the error code in its response, for every request forwarded as is.
func TestForwardError(t *testing.T) {
	code := kerr.RequestTimedOut.Code
	elect := kmsg.NewPtrElectLeadersRequest()
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "t", []int32{0, 1}
	elect.Topics = append(elect.Topics, et)
	er := kraft.ErrorResponse(elect, code).(*kmsg.ElectLeadersResponse)
	if len(er.Topics) != 1 || len(er.Topics[0].Partitions) != 2 || er.Topics[0].Partitions[1].ErrorCode != code {
		t.Fatalf("ElectLeaders: %+v", er)
	}
	if r := kraft.ErrorResponse(kmsg.NewPtrAlterPartitionAssignmentsRequest(), code).(*kmsg.AlterPartitionAssignmentsResponse); r.ErrorCode != code {
		t.Fatalf("AlterPartitionAssignments: %+v", r)
	}
	if r := kraft.ErrorResponse(kmsg.NewPtrListPartitionReassignmentsRequest(), code).(*kmsg.ListPartitionReassignmentsResponse); r.ErrorCode != code {
		t.Fatalf("ListPartitionReassignments: %+v", r)
	}
}

// TestAutoCreateRefusedAnswersAtOnce: when the controller cannot create a
// topic Metadata asks for (here: default.replication.factor 3 on one
// broker), Metadata answers LEADER_NOT_AVAILABLE at once instead of
// waiting for a topic that will never appear.
func TestAutoCreateRefusedAnswersAtOnce(t *testing.T) {
	settings, err := config.NewBroker(map[string]string{config.NodeID: "1", config.DefaultReplicationFactor: "3"})
	if err != nil {
		t.Fatal(err)
	}
	tb := startBroker(t, t.TempDir(), func(c *Config) { c.Settings = settings })
	c := newClient(t, tb.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr("never")
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(ctx, c)
	if err != nil {
		t.Fatalf("Metadata with a refused auto-creation did not answer: %v", err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.LeaderNotAvailable.Code {
		t.Fatalf("topic error %v, want LEADER_NOT_AVAILABLE", kerr.ErrorForCode(code))
	}
}

// TestLeaderHintOnAcksAllWait: an acks=all produce still waiting for its
// followers when leadership leaves is answered NOT_LEADER_OR_FOLLOWER
// with the new leader (KIP-951), like one refused up front.
func TestLeaderHintOnAcksAllWait(t *testing.T) {
	tc := startCluster(t, 2)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr))
	tc.createAssigned(t, ctx, c, "moving", []int32{1, 2})
	// The follower stops fetching: the batch below cannot commit.
	tc.brokers[1].b.replicas.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 20000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic, pt.TopicID = "moving", topicIDOf(t, tc.brokers[0], "moving")
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = oneBatch(t)
	pt.Partitions = append(pt.Partitions, pp)
	req.Topics = append(req.Topics, pt)
	answered := make(chan *kmsg.ProduceResponse, 1)
	go func() {
		resp, err := req.RequestWith(ctx, c.Broker(1))
		if err != nil {
			t.Error(err)
		}
		answered <- resp
	}()
	// Wait until the batch is in the leader's log, then move leadership
	// away with a controlled shutdown of the leader.
	b1 := tc.brokers[0].b
	deadline := time.Now().Add(10 * time.Second)
	for partitionAt(b1, "moving", 0).log().EndOffset() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the batch never reached the leader's log")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := b1.ControlledShutdown(ctx); err != nil {
		t.Fatalf("controlled shutdown: %v", err)
	}
	resp := <-answered
	if resp == nil {
		t.Fatal("no answer")
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.NotLeaderForPartition.Code || sp.CurrentLeader.LeaderID != 2 {
		t.Fatalf("waiting acks=all produce: code %v, current leader %+v", kerr.ErrorForCode(sp.ErrorCode), sp.CurrentLeader)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 {
		t.Fatalf("hint endpoints %+v, want node 2", resp.Brokers)
	}
}
