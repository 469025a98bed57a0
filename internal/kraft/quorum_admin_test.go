package kraft

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeQuorum(t *testing.T, cl ControllerClient) *kmsg.DescribeQuorumResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeQuorumRequest()
	tp := kmsg.NewDescribeQuorumRequestTopic()
	tp.Topic = clusterMetadataTopic
	tp.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
	req.Topics = append(req.Topics, tp)
	resp, err := cl.Admin(ctxTimeout(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	if dq.ErrorCode != 0 || dq.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("DescribeQuorum: %v %v", kerr.ErrorForCode(dq.ErrorCode), kerr.ErrorForCode(dq.Topics[0].Partitions[0].ErrorCode))
	}
	return dq
}

func replicaIDs(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []int32 {
	var ids []int32
	for _, r := range rs {
		ids = append(ids, r.ReplicaID)
	}
	slices.Sort(ids)
	return ids
}

// TestQuorumAdmin: DescribeQuorum, sent through a node that is not the
// controller, names the leader, its term, the voters with their raft
// endpoints and the observer, with every replica's progress; a node is
// replaced without rebuilding the quorum: the observer is added as a
// voter (AddRaftVoter) and a voter removed (RemoveRaftVoter makes it an
// observer), after which the quorum survives the loss of another
// original voter. Requests that name a voter already there, a voter that
// is not, or another cluster are refused.
func TestQuorumAdmin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four raft nodes")
	}
	c := startCluster(t, 3, 1, func(cfg *Config) { cfg.Controller.ClusterID = "qa" })
	for id := int32(1); id <= 4; id++ {
		c.startBroker(id)
	}
	for id := int32(1); id <= 4; id++ {
		select {
		case <-c.nodes[id].life.Unfenced():
		case <-time.After(20 * time.Second):
			t.Fatalf("broker %d not unfenced (state %v)", id, c.nodes[id].life.State())
		}
	}
	lead := c.leader(10 * time.Second)
	var via *testNode
	for id := int32(1); id <= 3; id++ {
		if id != lead.id {
			via = c.nodes[id]
		}
	}
	eventually(t, 10*time.Second, "every broker reported a heartbeat", func() bool {
		p := describeQuorum(t, via.client).Topics[0].Partitions[0]
		for _, r := range append(p.CurrentVoters, p.Observers...) {
			if r.LogEndOffset < 0 || r.LastFetchTimestamp <= 0 {
				return false
			}
		}
		return true
	})
	dq := describeQuorum(t, via.client)
	p := dq.Topics[0].Partitions[0]
	if p.LeaderID != lead.id || p.LeaderEpoch < 1 || p.HighWatermark < 0 {
		t.Fatalf("leader %d epoch %d hw %d; want leader %d", p.LeaderID, p.LeaderEpoch, p.HighWatermark, lead.id)
	}
	if v, o := replicaIDs(p.CurrentVoters), replicaIDs(p.Observers); !slices.Equal(v, []int32{1, 2, 3}) || !slices.Equal(o, []int32{4}) {
		t.Fatalf("voters %v observers %v", v, o)
	}
	if len(dq.Nodes) != 3 || dq.Nodes[0].Listeners[0].Name != controllerListener {
		t.Fatalf("nodes %+v", dq.Nodes)
	}
	for _, n := range dq.Nodes {
		l := n.Listeners[0]
		if got, want := fmt.Sprintf("%s:%d", l.Host, l.Port), c.nodes[n.NodeID].cfg.RaftAddr; got != want {
			t.Fatalf("node %d endpoint %s, want its raft address %s", n.NodeID, got, want)
		}
	}

	admin := func(req kmsg.Request) int16 {
		t.Helper()
		resp, err := via.client.Admin(ctxTimeout(t, 30*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		switch r := resp.(type) {
		case *kmsg.AddRaftVoterResponse:
			return r.ErrorCode
		case *kmsg.RemoveRaftVoterResponse:
			return r.ErrorCode
		}
		t.Fatalf("unexpected %T", resp)
		return 0
	}
	add := func(id int32, cluster string) int16 {
		req := kmsg.NewPtrAddRaftVoterRequest()
		req.ClusterID, req.VoterID = &cluster, id
		host, port, _ := splitHostPort(c.nodes[id].cfg.RaftAddr)
		l := kmsg.NewAddRaftVoterRequestListener()
		l.Name, l.Host, l.Port = controllerListener, host, uint16(port)
		req.Listeners = append(req.Listeners, l)
		return admin(req)
	}
	remove := func(id int32, cluster string) int16 {
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		req.ClusterID, req.VoterID = &cluster, id
		return admin(req)
	}
	if code := add(2, "qa"); code != kerr.DuplicateVoter.Code {
		t.Fatalf("adding a voter again: %v", kerr.ErrorForCode(code))
	}
	if code := remove(4, "qa"); code != kerr.VoterNotFound.Code {
		t.Fatalf("removing an observer: %v", kerr.ErrorForCode(code))
	}
	if code := add(4, "other"); code != kerr.InconsistentClusterID.Code {
		t.Fatalf("another cluster's id: %v", kerr.ErrorForCode(code))
	}

	// Replace voter `gone` (not the leader, not the node asked through)
	// by node 4.
	var gone int32
	for id := int32(1); id <= 3; id++ {
		if id != lead.id && id != via.id {
			gone = id
		}
	}
	if code := add(4, "qa"); code != 0 {
		t.Fatalf("add node 4: %v", kerr.ErrorForCode(code))
	}
	if code := remove(gone, "qa"); code != 0 {
		t.Fatalf("remove node %d: %v", gone, kerr.ErrorForCode(code))
	}
	p = describeQuorum(t, via.client).Topics[0].Partitions[0]
	wantVoters := []int32{lead.id, via.id, 4}
	slices.Sort(wantVoters)
	if v, o := replicaIDs(p.CurrentVoters), replicaIDs(p.Observers); !slices.Equal(v, wantVoters) || !slices.Equal(o, []int32{gone}) {
		t.Fatalf("after the replacement: voters %v observers %v", v, o)
	}
	// The removed node is gone for good; then the leader dies too. The
	// two voters left (one of them the new one) elect a leader and keep
	// the controller going.
	c.kill(gone)
	c.kill(lead.id)
	next := c.leader(20 * time.Second)
	if next.id == gone || next.id == lead.id {
		t.Fatalf("node %d leads", next.id)
	}
	createTopics(t, c.nodes[4].client, "after-replacement", 1, 1, 2)
	t.Logf("voters %v, then nodes %d and %d lost: node %d leads", wantVoters, gone, lead.id, next.id)
}
