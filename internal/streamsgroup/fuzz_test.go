package streamsgroup

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzHeartbeat decodes arbitrary request bodies and drives the ones that
// pass validation through a group twice (join, then heartbeat): no input
// may panic, and a request refused leaves the group as it was.
func FuzzHeartbeat(f *testing.F) {
	seed := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	seed.Group, seed.MemberID, seed.RebalanceTimeoutMillis = "app", "m", 1000
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s.SubtopologyID, s.SourceTopics, s.RepartitionSinkTopics = "0", []string{"in"}, []string{"r"}
	s2 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s2.SubtopologyID = "1"
	ti := kmsg.NewTopicInfo()
	ti.Topic = "r"
	s2.RepartitionSourceTopics = []kmsg.TopicInfo{ti}
	ti.Topic = "store"
	s2.StateChangelogTopics = []kmsg.TopicInfo{ti}
	cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
	cg.RepartitionSourceTopics = []int16{0}
	s2.CopartitionGroups = append(s2.CopartitionGroups, cg)
	top.Subtopologies = append(top.Subtopologies, s, s2)
	seed.Topology = &top
	seed.ActiveTasks, seed.StandbyTasks, seed.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	f.Add(seed.AppendTo(nil), []byte{3, 3, 0})
	seed.Topology = nil
	seed.MemberEpoch = 1
	seed.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 5, -1}}}
	f.Add(seed.AppendTo(nil), []byte{3, 2})
	f.Fuzz(func(t *testing.T, body, counts []byte) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		if err := req.ReadFrom(body); err != nil {
			return
		}
		if code, _ := ValidateRequest(req); code != 0 {
			return
		}
		// The topics the topology names exist with the partition counts
		// the second input gives them in turn (0: missing), so that
		// configuring meets missing, mismatched and copartitioned topics.
		topics := memTopics{}
		if req.Topology != nil {
			for i, name := range topologyNames(TopologyFromRequest(req.Topology)) {
				if i < len(counts) && counts[i] > 0 {
					topics[name] = int32(counts[i] % 64)
				}
			}
		}
		g := New("app", Config{NumStandbyReplicas: 1})
		join := *req
		join.MemberEpoch = 0
		if join.Topology == nil {
			return
		}
		res := g.Heartbeat(&join, Client{}, topics)
		if res.Response.ErrorCode != 0 {
			if len(g.Members) != 0 || g.Epoch != 0 {
				t.Fatal("a refused join changed the group")
			}
			return
		}
		before := string(g.GroupValue())
		req.Topology = nil
		if res := g.Heartbeat(req, Client{}, topics); res.Response.ErrorCode != 0 && string(g.GroupValue()) != before {
			t.Fatal("a refused heartbeat changed the group")
		}
	})
}

// FuzzReplay feeds arbitrary stored values to the replay decoders: they
// must refuse or accept without panicking, and what they accept must
// encode again.
func FuzzReplay(f *testing.F) {
	g := New("app", Config{})
	g.Topology = &Topology{Epoch: 1, Subtopologies: []Subtopology{{ID: "0", SourceTopics: []string{"in"}}}}
	g.Members["m"] = newMember("m")
	g.Members["m"].Assigned.Active[TaskID{"0", 1}] = struct{}{}
	f.Add(g.GroupValue(), g.MemberValue("m"))
	f.Add([]byte{0, '{', '}'}, []byte{1})
	f.Fuzz(func(t *testing.T, gv, mv []byte) {
		ng := New("app", Config{})
		if ng.ReplayGroup(gv) == nil {
			_ = ng.GroupValue()
			_ = ng.Describe()
		}
		if ng.ReplayMember("m", mv) == nil {
			_ = ng.MemberValue("m")
			_ = ng.Describe()
		}
	})
}

// topologyNames lists every topic a topology names, in order.
func topologyNames(t *Topology) []string {
	var out []string
	for _, s := range t.Subtopologies {
		out = append(out, s.SourceTopics...)
		for _, it := range s.RepartitionSourceTopics {
			out = append(out, it.Name)
		}
		for _, it := range s.StateChangelogTopics {
			out = append(out, it.Name)
		}
	}
	return out
}
