package kraft

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// batchCounter counts, from a subscription, the applied batches that
// changed a partition's leader and the leader changes in them.
type batchCounter struct {
	sub *Subscription
}

func (b batchCounter) leaderBatches() (batches, changes int) {
	for _, u := range b.sub.Drain() {
		if u.Delta == nil {
			continue
		}
		n := 0
		for _, pd := range u.Delta.Partitions {
			if !pd.Created && pd.LeaderChanged() {
				n++
			}
		}
		if n > 0 {
			batches++
			changes += n
		}
	}
	return batches, changes
}

// TestThreeVotersAndANonVoter runs four nodes (three voters and one
// non-voter, each a broker), all talking to the controller over the
// Kafka protocol: 1,000 partitions with three replicas created through
// the controller reach every image; a controlled shutdown of a broker
// leading a third of them moves all its leaderships in one committed
// batch; killing the raft leader hands the controller to another voter,
// which accepts a leadership change; the killed node, restarted after
// the log moved on, catches up from its snapshot and the log's tail.
func TestThreeVotersAndANonVoter(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four raft nodes")
	}
	c := startCluster(t, 3, 1, nil)
	for id := int32(1); id <= 3; id++ {
		c.startBroker(id)
	}
	for id := int32(1); id <= 3; id++ {
		select {
		case <-c.nodes[id].life.Unfenced():
		case <-time.After(20 * time.Second):
			t.Fatalf("broker %d not unfenced (state %v)", id, c.nodes[id].life.State())
		}
	}
	lead := c.leader(10 * time.Second)
	t.Logf("raft leader and controller: node %d", lead.id)

	// The non-voter asks, over the Kafka protocol, for 20 topics of 50
	// partitions with three replicas: on brokers 1-3, each leads a third.
	nv := c.nodes[4]
	eventually(t, 10*time.Second, "the non-voter knows the leader", func() bool { return nv.node.Leader() == lead.id })
	start := time.Now()
	createTopics(t, nv.client, "t", 20, 50, 3)
	t.Logf("created 1,000 partitions (RF 3) in %v", time.Since(start))
	c.startBroker(4)
	select {
	case <-c.nodes[4].life.Unfenced():
	case <-time.After(20 * time.Second):
		t.Fatalf("broker 4 not unfenced (state %v)", c.nodes[4].life.State())
	}
	img := c.converged(10*time.Second, lead.node)
	if img.NumPartitions() != 1000 || img.NumBrokers() != 4 {
		t.Fatalf("image: %d partitions, %d brokers", img.NumPartitions(), img.NumBrokers())
	}

	// Followers answer NOT_CONTROLLER themselves.
	for _, tn := range c.live() {
		if tn.id == lead.id {
			continue
		}
		resp, err := tn.node.HandleControllerRequest(context.Background(), 63, kmsg.NewPtrBrokerHeartbeatRequest())
		if err != nil || !IsNotController(resp) {
			t.Fatalf("node %d: %+v %v: want NOT_CONTROLLER", tn.id, resp, err)
		}
	}

	// Controlled shutdown of a voter's broker that is not the controller.
	var victim int32
	for id := int32(1); id <= 3; id++ {
		if id != lead.id {
			victim = id
			break
		}
	}
	led := leaderships(img, victim)
	if led < 300 || led > 367 {
		t.Fatalf("broker %d leads %d of 1,000 partitions, want about a third", victim, led)
	}
	counter := batchCounter{lead.node.FSM().Subscribe(1 << 20)}
	defer counter.sub.Close()
	counter.sub.Drain()
	start = time.Now()
	if err := c.nodes[victim].life.Shutdown(ctxTimeout(t, 20*time.Second)); err != nil {
		t.Fatalf("controlled shutdown of broker %d: %v", victim, err)
	}
	took := time.Since(start)
	batches, changes := counter.leaderBatches()
	t.Logf("controlled shutdown of broker %d leading %d partitions: %v, %d batch(es) with %d leader changes", victim, led, took, batches, changes)
	if batches != 1 || changes != led {
		t.Fatalf("controlled shutdown moved %d leaderships in %d batches, want %d in one", changes, batches, led)
	}
	img = lead.node.Image()
	if b, _ := img.Broker(victim); !b.Fenced || leaderships(img, victim) != 0 {
		t.Fatalf("after shutdown broker %d: fenced %v, leads %d", victim, b.Fenced, leaderships(img, victim))
	}
	if c.nodes[victim].life.State() != StateStopped {
		t.Fatalf("broker %d state %v", victim, c.nodes[victim].life.State())
	}

	// A partition led by a broker that survives, whose preferred leader
	// is another survivor: the probe of the failover.
	var other int32 // the voter that is neither the leader nor the victim
	for id := int32(1); id <= 3; id++ {
		if id != lead.id && id != victim {
			other = id
		}
	}
	probe := kmsg.NewPtrCreateTopicsRequest()
	pt := kmsg.NewCreateTopicsRequestTopic()
	pt.Topic, pt.NumPartitions, pt.ReplicationFactor = "probe", -1, -1
	pa := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	pa.Partition, pa.Replicas = 0, []int32{other, 4}
	pt.ReplicaAssignment = append(pt.ReplicaAssignment, pa)
	probe.Topics = append(probe.Topics, pt)
	mustOK(t, c.nodes[other].client, probe)
	reorder := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "probe"
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = 0, []int32{4, other}
	rt.Partitions = append(rt.Partitions, rp)
	reorder.Topics = append(reorder.Topics, rt)
	mustOK(t, c.nodes[other].client, reorder)
	c.converged(10*time.Second, lead.node)
	if p := probePartition(t, c.nodes[other].node.Image()); p.Leader() != other || p.PreferredLeader() != 4 {
		t.Fatalf("probe before failover: %v", p)
	}

	// Kill the raft leader and time the first leadership change the new
	// controller accepts.
	snapshotAt := lead.node.Image().Offset()
	if err := lead.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	killedAt := lead.node.Image().Offset()
	killed := lead.id
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.ElectionType = 0
	et := kmsg.NewElectLeadersRequestTopic()
	et.Topic, et.Partitions = "probe", []int32{0}
	elect.Topics = append(elect.Topics, et)
	start = time.Now()
	c.kill(killed)
	resp, err := c.nodes[other].client.Admin(ctxTimeout(t, 20*time.Second), elect)
	failover := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	er := resp.(*kmsg.ElectLeadersResponse)
	if er.ErrorCode != 0 || er.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("election after failover: %+v", er)
	}
	newLead := c.leader(time.Second)
	t.Logf("failover: node %d killed, node %d accepted a leadership change %v later", killed, newLead.id, failover)
	if newLead.id == killed {
		t.Fatal("the killed node leads")
	}
	if p := probePartition(t, newLead.node.Image()); p.Leader() != 4 {
		t.Fatalf("probe after election: %v", p)
	}

	// The log moves on while the old leader is down; it restarts from its
	// own snapshot (taken before the kill, so the restart does not replay
	// the log from the start) and takes the rest from the new leader.
	for i := range 10 {
		createTopics(t, c.nodes[other].client, "late"+string(rune('a'+i)), 5, 2, 2)
	}
	c.open(c.nodes[killed])
	restarted := c.nodes[killed].node
	img = c.converged(20*time.Second, newLead.node)
	if restarted.FSM().Restores() != 1 || restarted.FSM().RestoredOffset() != snapshotAt || img.Offset() <= killedAt {
		t.Fatalf("restarted node: %d restores, last at offset %d; snapshot at %d, killed at %d, now at %d", restarted.FSM().Restores(), restarted.FSM().RestoredOffset(), snapshotAt, killedAt, img.Offset())
	}
	t.Logf("node %d restarted from its snapshot at offset %d and caught up to %d", killed, snapshotAt, img.Offset())
}

func probePartition(tb testing.TB, img *metadata.Image) metadata.Partition {
	tb.Helper()
	tp, ok := img.TopicByName("probe")
	if !ok {
		tb.Fatal("no probe topic")
	}
	p, _ := tp.Partition(0)
	return p
}

// mustOK sends an admin request and fails on any error code in it.
func mustOK(tb testing.TB, cl ControllerClient, req kmsg.Request) kmsg.Response {
	tb.Helper()
	resp, err := cl.Admin(ctxTimeout(tb, 120*time.Second), req)
	if err != nil {
		tb.Fatal(err)
	}
	check := func(code int16, msg *string) {
		if code != 0 {
			tb.Fatalf("%s: %v %v", kmsg.NameForKey(req.Key()), kerr.ErrorForCode(code), msg)
		}
	}
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			check(t.ErrorCode, t.ErrorMessage)
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		check(r.ErrorCode, r.ErrorMessage)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				check(p.ErrorCode, p.ErrorMessage)
			}
		}
	}
	return resp
}
