package streamsgroup

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
)

// Status codes of a StreamsGroupHeartbeat answer (its Status list).
const (
	StatusStaleTopology                int8 = 0
	StatusMissingSourceTopics          int8 = 1
	StatusIncorrectlyPartitionedTopics int8 = 2
	StatusMissingInternalTopics        int8 = 3
	StatusShutdownApplication          int8 = 4
)

// Status is one entry of a heartbeat answer's Status list.
type Status struct {
	Code   int8
	Detail string
}

// TopicView is what the group needs to know of the cluster's topics: the
// partition count of a topic, if it exists.
type TopicView interface {
	Partitions(topic string) (int32, bool)
}

// NewTopic is an internal topic the broker must create for a group:
// ReplicationFactor -1 and no configs mean the broker's defaults.
type NewTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           []TopicConfig
}

// configured is a topology checked against the topics that exist: how
// many tasks each subtopology has, or why it cannot run yet.
type configured struct {
	// ready: every topic exists with the partitions it must have; tasks
	// can be assigned.
	ready bool
	// tasks is the number of tasks (partitions) of each subtopology, set
	// when the partition counts could be decided (ready, or only
	// internal topics missing).
	tasks map[string]int32
	// partitions of every input topic of the topology, as decided.
	partitions map[string]int32
	status     *Status
	create     []NewTopic
}

// configure decides the partition counts of a topology's internal topics
// from its source topics, as Kafka's InternalTopicManager does:
// repartition topics without a fixed count take the largest task count
// of the subtopologies writing to them, copartitioned topics must agree,
// changelog topics have one partition per task. Internal topics that do
// not exist are listed for creation (MISSING_INTERNAL_TOPICS); source
// topics that do not exist, and existing topics with the wrong partition
// count, stop the group (MISSING_SOURCE_TOPICS,
// INCORRECTLY_PARTITIONED_TOPICS).
func configure(t *Topology, topics TopicView) configured {
	var missing []string
	for i := range t.Subtopologies {
		for _, name := range t.Subtopologies[i].SourceTopics {
			if _, ok := topics.Partitions(name); !ok {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		missing = slices.Compact(missing)
		return configured{status: &Status{StatusMissingSourceTopics, fmt.Sprintf("Source topics %s are missing.", strings.Join(missing, ", "))}}
	}

	decided := make(map[string]int32)
	count := func(name string) (int32, bool) {
		if n, ok := topics.Partitions(name); ok {
			return n, true
		}
		n, ok := decided[name]
		return n, ok
	}
	for i := range t.Subtopologies {
		for _, rt := range t.Subtopologies[i].RepartitionSourceTopics {
			if rt.Partitions > 0 {
				if _, ok := topics.Partitions(rt.Name); !ok {
					decided[rt.Name] = rt.Partitions
				}
			}
		}
	}
	// Flexible repartition topics: iterate to a fixed point, each round
	// deciding those whose writers' task counts are known. A topology
	// passes Validate, so every sink is some subtopology's source; a
	// cycle without a fixed count stays undecided and is reported.
	writers := make(map[string][]*Subtopology)
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		for _, name := range s.RepartitionSinkTopics {
			writers[name] = append(writers[name], s)
		}
	}
	taskCount := func(s *Subtopology) (int32, bool) {
		var n int32
		for _, name := range s.SourceTopics {
			c, ok := count(name)
			if !ok {
				return 0, false
			}
			n = max(n, c)
		}
		for _, rt := range s.RepartitionSourceTopics {
			c, ok := count(rt.Name)
			if !ok {
				return 0, false
			}
			n = max(n, c)
		}
		return n, true
	}
	for progress := true; progress; {
		progress = false
		for i := range t.Subtopologies {
			for _, rt := range t.Subtopologies[i].RepartitionSourceTopics {
				if _, ok := count(rt.Name); ok {
					continue
				}
				var n int32
				known := len(writers[rt.Name]) > 0
				for _, w := range writers[rt.Name] {
					c, ok := taskCount(w)
					if !ok {
						known = false
						break
					}
					n = max(n, c)
				}
				if known && n > 0 {
					decided[rt.Name] = n
					progress = true
				}
			}
		}
	}
	for i := range t.Subtopologies {
		for _, rt := range t.Subtopologies[i].RepartitionSourceTopics {
			if _, ok := count(rt.Name); !ok {
				return configured{status: &Status{StatusIncorrectlyPartitionedTopics,
					fmt.Sprintf("The number of partitions of repartition topic %s could not be determined.", rt.Name)}}
			}
		}
	}
	if st := enforceCopartitioning(t, topics, decided, count); st != nil {
		return configured{status: st}
	}

	c := configured{tasks: make(map[string]int32), partitions: make(map[string]int32)}
	wanted := make(map[string]NewTopic)
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		n, _ := taskCount(s)
		c.tasks[s.ID] = n
		for _, name := range s.SourceTopics {
			c.partitions[name], _ = count(name)
		}
		for _, rt := range s.RepartitionSourceTopics {
			p, _ := count(rt.Name)
			c.partitions[rt.Name] = p
			wanted[rt.Name] = newTopic(rt, p)
		}
		for _, ct := range s.StateChangelogTopics {
			if _, isSource := c.partitions[ct.Name]; isSource || slices.Contains(s.SourceTopics, ct.Name) {
				// A source topic reused as a changelog exists already.
				continue
			}
			wanted[ct.Name] = newTopic(ct, n)
		}
	}
	names := make([]string, 0, len(wanted))
	for name := range wanted {
		names = append(names, name)
	}
	slices.Sort(names)
	var missingInternal []string
	for _, name := range names {
		want := wanted[name]
		if have, ok := topics.Partitions(name); ok {
			if have != want.Partitions {
				return configured{status: &Status{StatusIncorrectlyPartitionedTopics,
					fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", name, want.Partitions, have)}}
			}
			continue
		}
		c.create = append(c.create, want)
		missingInternal = append(missingInternal, name)
	}
	if len(missingInternal) > 0 {
		c.status = &Status{StatusMissingInternalTopics, fmt.Sprintf("Internal topics are missing: %s", strings.Join(missingInternal, ", "))}
		return c
	}
	c.ready = true
	return c
}

func newTopic(it InternalTopic, partitions int32) NewTopic {
	rf := it.ReplicationFactor
	if rf == 0 {
		rf = -1
	}
	return NewTopic{Name: it.Name, Partitions: partitions, ReplicationFactor: rf, Configs: slices.Clone(it.Configs)}
}

// enforceCopartitioning checks each copartition group: its source topics
// must have equal partition counts, its repartition topics with a fixed
// count too and the same as the sources; repartition topics without a
// fixed count (and not yet created) take the group's count.
func enforceCopartitioning(t *Topology, topics TopicView, decided map[string]int32, count func(string) (int32, bool)) *Status {
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		for _, cg := range s.CopartitionGroups {
			var want int32
			var wantFrom string
			check := func(name string, n int32) *Status {
				if want == 0 {
					want, wantFrom = n, name
					return nil
				}
				if n != want {
					return &Status{StatusIncorrectlyPartitionedTopics, fmt.Sprintf(
						"Following topics do not have the same number of partitions: [%s: %d, %s: %d]", wantFrom, want, name, n)}
				}
				return nil
			}
			for _, ix := range cg.SourceTopics {
				name := s.SourceTopics[ix]
				n, _ := count(name)
				if st := check(name, n); st != nil {
					return st
				}
			}
			var flexible []string
			for _, ix := range cg.RepartitionSourceTopics {
				rt := s.RepartitionSourceTopics[ix]
				_, exists := topics.Partitions(rt.Name)
				if rt.Partitions == 0 && !exists {
					flexible = append(flexible, rt.Name)
					continue
				}
				n, _ := count(rt.Name)
				if st := check(rt.Name, n); st != nil {
					return st
				}
			}
			if want == 0 {
				for _, name := range flexible {
					want = max(want, decided[name])
				}
			}
			for _, name := range flexible {
				decided[name] = want
			}
		}
	}
	return nil
}

// fingerprint summarizes the partition counts of every topic a topology
// names, so the group notices when topics come, go or grow.
func fingerprint(t *Topology, topics TopicView) uint64 {
	h := fnv.New64a()
	var names []string
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		names = append(names, s.SourceTopics...)
		for _, rt := range s.RepartitionSourceTopics {
			names = append(names, rt.Name)
		}
		for _, ct := range s.StateChangelogTopics {
			names = append(names, ct.Name)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		n, ok := topics.Partitions(name)
		if !ok {
			n = -1
		}
		fmt.Fprintf(h, "%s=%d;", name, n)
	}
	return h.Sum64()
}
