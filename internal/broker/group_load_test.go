package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/group"
)

// A group whose __consumer_offsets partition this node leads but whose
// coordinator has not loaded it (the window between the partition's
// election and the coordinator's reload) is answered NOT_COORDINATOR, so
// the client retries, never GROUP_ID_NOT_FOUND as if the group were gone.
func TestGroupOfUnloadedPartitionIsNotCoordinated(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "words", 1, nil)

	heartbeat := func(epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", "m", epoch, 30000
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if epoch == 0 {
			top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			s.SubtopologyID, s.SourceTopics = "0", []string{"words"}
			top.Subtopologies = append(top.Subtopologies, s)
			req.Topology = &top
		}
		return request[*kmsg.StreamsGroupHeartbeatResponse](t, ctx, c, req)
	}
	resp := heartbeat(0)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	epoch := resp.MemberEpoch

	// A coordinator that loaded no partition (and knows no group) stands
	// in, as one made before this node led any.
	tb.b.grpMu.Lock()
	gcfg := tb.b.cfg.Group
	gcfg.Store = group.NewMemStore()
	gcfg.Partitions = []int32{}
	stale, err := group.New(gcfg)
	if err == nil {
		err = stale.Start(ctx)
	}
	if err != nil {
		tb.b.grpMu.Unlock()
		t.Fatal(err)
	}
	loaded := tb.b.grp.Swap(stale)
	tb.b.grpMu.Unlock()
	if code := heartbeat(epoch).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat to an unloaded partition: %v", kerr.ErrorForCode(code))
	}
	tb.b.grpMu.Lock()
	tb.b.grp.Swap(loaded)
	tb.b.grpMu.Unlock()
	stale.Close()
	if code := heartbeat(epoch).ErrorCode; code != 0 {
		t.Fatalf("heartbeat once loaded: %v", kerr.ErrorForCode(code))
	}
}
