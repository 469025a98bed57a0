package streamsgroup

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkHeartbeat: a steady heartbeat of one member of a stable group
// of 50 members over 2 subtopologies of 500 partitions each (1000 tasks).
func BenchmarkHeartbeat(b *testing.B) { benchmarkHeartbeat(b, false) }

// BenchmarkRebalance: in the same group, a member joins (a new target
// for all: the sticky assignor over 1000 tasks and 51 members) and its
// first heartbeats, then leaves (another new target).
func BenchmarkRebalance(b *testing.B) { benchmarkHeartbeat(b, true) }

func benchmarkHeartbeat(b *testing.B, rebalance bool) {
	const members, partitions = 50, 500
	topics := memTopics{"in": partitions, "rep": partitions}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"in"}, []string{"rep"}
	s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s1.SubtopologyID = "1"
	rt := kmsg.NewTopicInfo()
	rt.Topic = "rep"
	s1.RepartitionSourceTopics = []kmsg.TopicInfo{rt}
	top.Subtopologies = append(top.Subtopologies, s0, s1)

	g := New("app", Config{})
	owned := map[string][]kmsg.TaskIDs{}
	epochs := map[string]int32{}
	beat := func(id string) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "app", id, epochs[id], -1
		if req.MemberEpoch == 0 {
			req.RebalanceTimeoutMillis, req.Topology = 60000, &top
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = append([]kmsg.TaskIDs{}, owned[id]...), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		resp := g.Heartbeat(req, Client{}, topics).Response
		if resp.ErrorCode != 0 {
			b.Fatalf("%s: error %d", id, resp.ErrorCode)
		}
		epochs[id] = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			owned[id] = resp.ActiveTasks
		}
		return resp
	}
	for i := range members {
		beat(fmt.Sprintf("m%02d", i))
	}
	for range 4 { // reconcile to a stable group
		for i := range members {
			beat(fmt.Sprintf("m%02d", i))
		}
	}
	if st := g.State(); st != StateStable {
		b.Fatalf("group %s", st)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if !rebalance {
			beat(fmt.Sprintf("m%02d", i%members))
			continue
		}
		epochs["new"], owned["new"] = 0, nil
		beat("new")
		beat("new")
		leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		leave.Group, leave.MemberID, leave.MemberEpoch = "app", "new", LeaveEpoch
		if r := g.Leave(leave).Response; r.ErrorCode != 0 {
			b.Fatalf("leave: %d", r.ErrorCode)
		}
	}
}
