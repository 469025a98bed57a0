package streamsgroup

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Describe returns the group as StreamsGroupDescribe reports it (the
// caller fills AuthorizedOperations). Once the topology is configured its
// internal topics carry the partition counts decided for them; before,
// they carry what the topology declares (0 for undecided), as Kafka
// reports them.
func (g *Group) Describe() kmsg.StreamsGroupDescribeResponseGroup {
	d := kmsg.NewStreamsGroupDescribeResponseGroup()
	d.Group = g.ID
	d.State = g.State()
	d.Epoch = g.Epoch
	d.AssignmentEpoch = g.AssignmentEpoch
	name := AssignorSticky
	d.AssignorName = &name
	if g.Topology != nil {
		t := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		t.Epoch = g.Topology.Epoch
		ready := g.configured != nil && g.configured.ready
		t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
		for _, s := range g.Topology.Subtopologies {
			ds := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
			ds.SubtopologyID = s.ID
			ds.SourceTopics = append([]string{}, s.SourceTopics...)
			ds.RepartitionSinkTopics = append([]string{}, s.RepartitionSinkTopics...)
			changelogs, repartitions := int32(-2), int32(-2)
			if ready {
				changelogs, repartitions = g.configured.tasks[s.ID], -1
			}
			ds.StateChangelogTopics = g.describeTopics(s.StateChangelogTopics, changelogs)
			ds.RepartitionSourceTopics = g.describeTopics(s.RepartitionSourceTopics, repartitions)
			t.Subtopologies = append(t.Subtopologies, ds)
		}
		d.Topology = &t
	}
	d.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, id := range g.SortedMemberIDs() {
		m := g.Members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID = m.ID
		dm.MemberEpoch = m.Epoch
		dm.RackID = m.RackID
		dm.ClientID = m.ClientID
		dm.ClientHost = m.ClientHost
		dm.TopologyEpoch = m.TopologyEpoch
		dm.ProcessID = m.ProcessID
		if m.UserEndpoint != nil {
			dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.UserEndpoint.Host, Port: m.UserEndpoint.Port}
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, k := range slices.Sorted(maps.Keys(m.ClientTags)) {
			dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: k, Value: m.ClientTags[k]})
		}
		dm.TaskOffsets = taskOffsetsWire(m.TaskOffsets)
		dm.TaskEndOffsets = taskOffsetsWire(m.TaskEndOffsets)
		dm.Assignment = streamsAssignment(m.Assigned)
		dm.TargetAssignment = streamsAssignment(m.Target)
		d.Members = append(d.Members, dm)
	}
	return d
}

// describeTopics lists internal topics with partitions, or with their
// decided partition counts for -1, or as declared for -2.
func (g *Group) describeTopics(ts []InternalTopic, partitions int32) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, it := range ts {
		ti := kmsg.NewTopicInfo()
		ti.Topic = it.Name
		ti.NumPartitions = it.Partitions
		switch {
		case partitions >= 0:
			ti.NumPartitions = partitions
		case partitions == -1:
			if p, ok := g.configured.partitions[it.Name]; ok {
				ti.NumPartitions = p
			}
		}
		ti.ReplicationFactor = it.ReplicationFactor
		ti.Configs = []kmsg.TopicInfoConfig{}
		for _, c := range it.Configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: c.Key, Value: c.Value})
		}
		out = append(out, ti)
	}
	return out
}

func streamsAssignment(a Assignment) kmsg.StreamsAssignment {
	s := kmsg.NewStreamsAssignment()
	s.ActiveTasks = a.Active.wire()
	s.StandbyTasks = a.Standby.wire()
	s.WarmupTasks = a.Warmup.wire()
	return s
}
