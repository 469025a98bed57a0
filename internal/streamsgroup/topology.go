package streamsgroup

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// TopicConfig is one topic-level configuration of an internal topic.
type TopicConfig struct {
	Key   string `json:"k"`
	Value string `json:"v"`
}

// InternalTopic is a repartition or changelog topic as the topology
// declares it. Partitions 0 means the coordinator decides.
type InternalTopic struct {
	Name              string        `json:"n"`
	Partitions        int32         `json:"p,omitempty"`
	ReplicationFactor int16         `json:"r,omitempty"`
	Configs           []TopicConfig `json:"c,omitempty"`
}

// CopartitionGroup lists, by index into its subtopology's SourceTopics
// and RepartitionSourceTopics, the topics that must have as many
// partitions as each other (a join's inputs).
type CopartitionGroup struct {
	SourceTopics            []int16 `json:"s,omitempty"`
	RepartitionSourceTopics []int16 `json:"r,omitempty"`
}

// Subtopology is one independently processed piece of a Streams
// topology: its tasks are numbered by the partitions of its input topics.
type Subtopology struct {
	ID                      string             `json:"id"`
	SourceTopics            []string           `json:"src,omitempty"`
	RepartitionSinkTopics   []string           `json:"sink,omitempty"`
	RepartitionSourceTopics []InternalTopic    `json:"rsrc,omitempty"`
	StateChangelogTopics    []InternalTopic    `json:"chg,omitempty"`
	CopartitionGroups       []CopartitionGroup `json:"cop,omitempty"`
}

// Topology is what a Streams application registers with its first
// heartbeat: the subtopologies sorted by id, and its epoch.
type Topology struct {
	Epoch         int32         `json:"epoch"`
	Subtopologies []Subtopology `json:"subs"`
}

func (t *Topology) subtopology(id string) *Subtopology {
	i, ok := slices.BinarySearchFunc(t.Subtopologies, id, func(s Subtopology, id string) int { return strings.Compare(s.ID, id) })
	if !ok {
		return nil
	}
	return &t.Subtopologies[i]
}

// equal reports whether two topologies are the same, epoch included.
func (t *Topology) equal(o *Topology) bool {
	if t.Epoch != o.Epoch || len(t.Subtopologies) != len(o.Subtopologies) {
		return false
	}
	for i := range t.Subtopologies {
		a, b := &t.Subtopologies[i], &o.Subtopologies[i]
		if a.ID != b.ID || !slices.Equal(a.SourceTopics, b.SourceTopics) || !slices.Equal(a.RepartitionSinkTopics, b.RepartitionSinkTopics) ||
			!slices.EqualFunc(a.RepartitionSourceTopics, b.RepartitionSourceTopics, equalInternalTopic) ||
			!slices.EqualFunc(a.StateChangelogTopics, b.StateChangelogTopics, equalInternalTopic) ||
			!slices.EqualFunc(a.CopartitionGroups, b.CopartitionGroups, func(x, y CopartitionGroup) bool {
				return slices.Equal(x.SourceTopics, y.SourceTopics) && slices.Equal(x.RepartitionSourceTopics, y.RepartitionSourceTopics)
			}) {
			return false
		}
	}
	return true
}

func equalInternalTopic(a, b InternalTopic) bool {
	return a.Name == b.Name && a.Partitions == b.Partitions && a.ReplicationFactor == b.ReplicationFactor && slices.Equal(a.Configs, b.Configs)
}

func internalTopicFromWire(t kmsg.TopicInfo) InternalTopic {
	it := InternalTopic{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor}
	for _, c := range t.Configs {
		it.Configs = append(it.Configs, TopicConfig{Key: c.Key, Value: c.Value})
	}
	slices.SortFunc(it.Configs, func(a, b TopicConfig) int { return strings.Compare(a.Key, b.Key) })
	return it
}

// TopologyFromRequest converts the topology of a heartbeat; the
// subtopologies come out sorted by id, and the lists inside them in the
// client's order (copartition groups index into them).
func TopologyFromRequest(rt *kmsg.StreamsGroupHeartbeatRequestTopology) *Topology {
	t := &Topology{Epoch: rt.Epoch}
	for _, rs := range rt.Subtopologies {
		s := Subtopology{
			ID:                    rs.SubtopologyID,
			SourceTopics:          slices.Clone(rs.SourceTopics),
			RepartitionSinkTopics: slices.Clone(rs.RepartitionSinkTopics),
		}
		for _, ti := range rs.RepartitionSourceTopics {
			s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, internalTopicFromWire(ti))
		}
		for _, ti := range rs.StateChangelogTopics {
			s.StateChangelogTopics = append(s.StateChangelogTopics, internalTopicFromWire(ti))
		}
		for _, cg := range rs.CopartitionGroups {
			s.CopartitionGroups = append(s.CopartitionGroups, CopartitionGroup{
				SourceTopics:            slices.Clone(cg.SourceTopics),
				RepartitionSourceTopics: slices.Clone(cg.RepartitionSourceTopics),
			})
		}
		t.Subtopologies = append(t.Subtopologies, s)
	}
	slices.SortStableFunc(t.Subtopologies, func(a, b Subtopology) int { return strings.Compare(a.ID, b.ID) })
	return t
}

// Limits on a registered topology, so a hostile heartbeat cannot make the
// coordinator hold or persist unbounded state.
const (
	maxSubtopologies = 10000
	maxTopicsPerRole = 10000
)

// Validate checks a topology as Kafka's coordinator does before it
// stores one, and a little more: it returns a *kerr.Error wrapped with
// the reason (STREAMS_INVALID_TOPOLOGY), or nil.
func (t *Topology) Validate() error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", kerr.StreamsInvalidTopology, fmt.Sprintf(format, args...))
	}
	if t.Epoch < 0 {
		return invalid("Topology epoch %d must not be negative.", t.Epoch)
	}
	if len(t.Subtopologies) > maxSubtopologies {
		return invalid("Topology has %d subtopologies, more than %d.", len(t.Subtopologies), maxSubtopologies)
	}
	if prohibited := t.kafkaInternalTopics(); len(prohibited) > 0 {
		return invalid("Use of Kafka internal topics %s in a Kafka Streams topology is prohibited.", strings.Join(prohibited, ","))
	}
	sources := make(map[string]string)      // topic -> subtopology reading it
	repartitions := make(map[string]string) // repartition source topic -> subtopology
	changelogs := make(map[string]struct{})
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		if s.ID == "" {
			return invalid("Subtopology ID can't be empty.")
		}
		if i > 0 && t.Subtopologies[i-1].ID == s.ID {
			return invalid("Subtopology %s is defined twice.", s.ID)
		}
		if len(s.SourceTopics) == 0 && len(s.RepartitionSourceTopics) == 0 {
			return invalid("Subtopology %s has no source topics.", s.ID)
		}
		for _, l := range [][]string{s.SourceTopics, s.RepartitionSinkTopics} {
			if len(l) > maxTopicsPerRole {
				return invalid("Subtopology %s lists more than %d topics.", s.ID, maxTopicsPerRole)
			}
		}
		if len(s.RepartitionSourceTopics) > maxTopicsPerRole || len(s.StateChangelogTopics) > maxTopicsPerRole {
			return invalid("Subtopology %s lists more than %d topics.", s.ID, maxTopicsPerRole)
		}
		for _, name := range s.SourceTopics {
			if err := metadata.ValidTopicName(name); err != nil {
				return invalid("Source topic of subtopology %s: %v", s.ID, err)
			}
			sources[name] = s.ID
		}
		for _, name := range s.RepartitionSinkTopics {
			if err := metadata.ValidTopicName(name); err != nil {
				return invalid("Repartition sink topic of subtopology %s: %v", s.ID, err)
			}
		}
		for _, rt := range s.RepartitionSourceTopics {
			if err := metadata.ValidTopicName(rt.Name); err != nil {
				return invalid("Repartition source topic of subtopology %s: %v", s.ID, err)
			}
			if rt.Partitions < 0 {
				return invalid("Repartition source topic %s has a negative partition count %d.", rt.Name, rt.Partitions)
			}
			if rt.ReplicationFactor < 0 {
				return invalid("Repartition source topic %s has a negative replication factor %d.", rt.Name, rt.ReplicationFactor)
			}
			if other, ok := repartitions[rt.Name]; ok {
				return invalid("Repartition source topic %s is read by subtopologies %s and %s.", rt.Name, other, s.ID)
			}
			repartitions[rt.Name] = s.ID
		}
		for _, ct := range s.StateChangelogTopics {
			if err := metadata.ValidTopicName(ct.Name); err != nil {
				return invalid("Changelog topic of subtopology %s: %v", s.ID, err)
			}
			if ct.Partitions != 0 {
				return invalid("Changelog topic %s must have an undefined partition count, but it is set to %d.", ct.Name, ct.Partitions)
			}
			if ct.ReplicationFactor < 0 {
				return invalid("Changelog topic %s has a negative replication factor %d.", ct.Name, ct.ReplicationFactor)
			}
			if _, ok := changelogs[ct.Name]; ok {
				return invalid("Changelog topic %s is declared twice.", ct.Name)
			}
			changelogs[ct.Name] = struct{}{}
		}
		for _, cg := range s.CopartitionGroups {
			for _, ix := range cg.SourceTopics {
				if ix < 0 || int(ix) >= len(s.SourceTopics) {
					return invalid("Copartition group of subtopology %s refers to source topic %d of %d.", s.ID, ix, len(s.SourceTopics))
				}
			}
			for _, ix := range cg.RepartitionSourceTopics {
				if ix < 0 || int(ix) >= len(s.RepartitionSourceTopics) {
					return invalid("Copartition group of subtopology %s refers to repartition source topic %d of %d.", s.ID, ix, len(s.RepartitionSourceTopics))
				}
			}
		}
	}
	for name := range repartitions {
		if _, ok := changelogs[name]; ok {
			return invalid("Topic %s is both a repartition and a changelog topic.", name)
		}
		if sub, ok := sources[name]; ok {
			return invalid("Topic %s is both a repartition topic and a source topic of subtopology %s.", name, sub)
		}
	}
	for i := range t.Subtopologies {
		for _, name := range t.Subtopologies[i].RepartitionSinkTopics {
			if _, ok := repartitions[name]; !ok {
				return invalid("Repartition sink topic %s of subtopology %s is no subtopology's repartition source topic.", name, t.Subtopologies[i].ID)
			}
		}
	}
	return nil
}

// kafkaInternalTopics returns the Kafka internal topics the topology
// names, in the order it names them.
func (t *Topology) kafkaInternalTopics() []string {
	var out []string
	add := func(name string) {
		if metadata.InternalTopic(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		for _, n := range s.SourceTopics {
			add(n)
		}
		for _, n := range s.RepartitionSinkTopics {
			add(n)
		}
		for _, it := range s.RepartitionSourceTopics {
			add(it.Name)
		}
		for _, it := range s.StateChangelogTopics {
			add(it.Name)
		}
	}
	return out
}
