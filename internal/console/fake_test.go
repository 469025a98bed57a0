package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// fakeCluster is a Cluster in memory: three brokers, topics with fixed
// partitions, groups with committed offsets; it counts the requests it
// is sent and records the actions taken.
type fakeCluster struct {
	mu        sync.Mutex
	requests  atomic.Int64
	topics    map[string]*fakeTopic
	groups    map[string]*fakeGroup
	actions   []string
	quorumErr error
	failAll   error
}

type fakeTopic struct {
	parts      int32
	start, end map[int32]int64
	size       map[int32]int64
	records    map[int32][]Record
}

type fakeGroup struct {
	typ       string
	members   []Member
	committed map[TP]int64
}

func newFake() *fakeCluster {
	f := &fakeCluster{topics: map[string]*fakeTopic{}, groups: map[string]*fakeGroup{}}
	f.addTopic("orders", 3)
	return f
}

func (f *fakeCluster) addTopic(name string, parts int32) *fakeTopic {
	t := &fakeTopic{parts: parts, start: map[int32]int64{}, end: map[int32]int64{}, size: map[int32]int64{}, records: map[int32][]Record{}}
	for p := range parts {
		t.start[p], t.end[p], t.size[p] = 0, 0, 0
	}
	f.topics[name] = t
	return t
}

func (f *fakeCluster) hit() error {
	f.requests.Add(1)
	return f.failAll
}

func (f *fakeCluster) act(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, s)
}

func (f *fakeCluster) Describe(context.Context) (ClusterInfo, error) {
	if err := f.hit(); err != nil {
		return ClusterInfo{}, err
	}
	return ClusterInfo{ID: "fake-cluster", Controller: 2, Brokers: []Broker{
		{ID: 1, Host: "127.0.0.1", Port: 9092, Rack: "r1"}, {ID: 2, Host: "127.0.0.1", Port: 9093}, {ID: 3, Host: "127.0.0.1", Port: 9094, Fenced: true}}}, nil
}

func (f *fakeCluster) Quorum(context.Context) (Quorum, error) {
	f.hit()
	if f.quorumErr != nil {
		return Quorum{}, f.quorumErr
	}
	return Quorum{Leader: 2, Epoch: 4, HighWatermark: 100, Voters: []QuorumReplica{{ID: 1, LogEnd: 90}, {ID: 2, LogEnd: 100}, {ID: 3, LogEnd: 100}}}, nil
}

func (f *fakeCluster) Topics(_ context.Context, names ...string) ([]Topic, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Topic
	add := func(name string, t *fakeTopic) {
		tp := Topic{Name: name, Internal: strings.HasPrefix(name, "__")}
		for p := range t.parts {
			leader := p%2 + 1
			part := Partition{ID: p, Leader: leader, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}
			if name == "orders" && p == 2 {
				part.ISR = []int32{1} // under-replicated
			}
			tp.Partitions = append(tp.Partitions, part)
		}
		out = append(out, tp)
	}
	if len(names) == 0 {
		for _, n := range sortedKeys(f.topics) {
			add(n, f.topics[n])
		}
		return out, nil
	}
	for _, n := range names {
		if t := f.topics[n]; t != nil {
			add(n, t)
		} else {
			out = append(out, Topic{Name: n, Err: errors.New("UNKNOWN_TOPIC_OR_PARTITION")})
		}
	}
	return out, nil
}

func (f *fakeCluster) Offsets(_ context.Context, topic string, spec int64) (map[int32]int64, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.topics[topic]
	if t == nil {
		return nil, errors.New("UNKNOWN_TOPIC_OR_PARTITION")
	}
	out := map[int32]int64{}
	for p := range t.parts {
		switch spec {
		case OffsetEarliest:
			out[p] = t.start[p]
		case OffsetLatest:
			out[p] = t.end[p]
		default: // a timestamp: the first record at or after it
			out[p] = -1
			for _, r := range t.records[p] {
				if r.Timestamp.UnixMilli() >= spec {
					out[p] = r.Offset
					break
				}
			}
		}
	}
	return out, nil
}

func (f *fakeCluster) LogDirs(_ context.Context, broker int32, parts []TP) (map[TP]int64, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[TP]int64{}
	for _, tp := range parts {
		if t := f.topics[tp.Topic]; t != nil && (broker == 1 || broker == 2) {
			out[tp] = t.size[tp.Partition]
		}
	}
	return out, nil
}

func (f *fakeCluster) Configs(_ context.Context, topic string) ([]TopicConfig, error) {
	f.hit()
	v, d := "3600000", "604800000"
	return []TopicConfig{{Name: "retention.ms", Value: &v, Source: "DYNAMIC_TOPIC_CONFIG"}, {Name: "segment.ms", Value: &d, Source: "DEFAULT_CONFIG"}}, nil
}

func (f *fakeCluster) Groups(context.Context) ([]GroupListing, error) {
	if err := f.hit(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []GroupListing
	for _, id := range sortedKeys(f.groups) {
		g := f.groups[id]
		state := "Empty"
		if len(g.members) > 0 {
			state = "Stable"
		}
		out = append(out, GroupListing{ID: id, Type: g.typ, State: state, Coordinator: 1})
	}
	return out, nil
}

func (f *fakeCluster) DescribeGroup(_ context.Context, l GroupListing) (GroupDetail, error) {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[l.ID]
	if g == nil {
		return GroupDetail{}, errors.New("GROUP_ID_NOT_FOUND")
	}
	return GroupDetail{GroupListing: l, Members: g.members}, nil
}

func (f *fakeCluster) Committed(_ context.Context, group string) (map[TP]int64, error) {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[TP]int64{}
	if g := f.groups[group]; g != nil {
		for tp, o := range g.committed {
			out[tp] = o
		}
	}
	return out, nil
}

func (f *fakeCluster) ShareOffsets(_ context.Context, group string) (map[TP]ShareOffset, error) {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[TP]ShareOffset{}
	if g := f.groups[group]; g != nil {
		for tp, o := range g.committed {
			out[tp] = ShareOffset{StartOffset: o, Lag: -1} // as a broker without v1
		}
	}
	return out, nil
}

func (f *fakeCluster) Records(_ context.Context, q RecordQuery) ([]Record, error) {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Record
	for _, r := range f.topics[q.Topic].records[q.Partition] {
		if r.Offset >= q.Offset && len(out) < q.Limit {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fakeCluster) Produce(_ context.Context, r ProduceRecord) (int32, int64, error) {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.topics[r.Topic]
	if t == nil {
		return 0, 0, errors.New("UNKNOWN_TOPIC_OR_PARTITION")
	}
	p := max(r.Partition, 0)
	off := t.end[p]
	t.records[p] = append(t.records[p], Record{Partition: p, Offset: off, Timestamp: time.UnixMilli(1_700_000_000_000 + off), Key: r.Key, Value: r.Value, Headers: r.Headers})
	t.end[p]++
	return p, off, nil
}

func (f *fakeCluster) CreateTopic(_ context.Context, s TopicSpec) error {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topics[s.Name] != nil {
		return errors.New("TOPIC_ALREADY_EXISTS: Topic with this name already exists.")
	}
	f.addTopic(s.Name, max(s.Partitions, 1))
	f.actions = append(f.actions, fmt.Sprintf("create %s %d %d %v", s.Name, s.Partitions, s.ReplicationFactor, s.Configs))
	return nil
}

func (f *fakeCluster) DeleteTopic(_ context.Context, name string) error {
	f.hit()
	f.act("delete " + name)
	return nil
}

func (f *fakeCluster) AlterConfig(_ context.Context, topic, name string, value *string) error {
	f.hit()
	if value == nil {
		f.act(fmt.Sprintf("alter %s %s delete", topic, name))
	} else {
		f.act(fmt.Sprintf("alter %s %s=%s", topic, name, *value))
	}
	return nil
}

func (f *fakeCluster) CommitOffsets(_ context.Context, group string, offsets map[TP]int64) error {
	f.hit()
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[group]
	if g == nil {
		g = &fakeGroup{typ: GroupClassic, committed: map[TP]int64{}}
		f.groups[group] = g
	}
	if len(g.members) > 0 {
		return errors.New("UNKNOWN_MEMBER_ID")
	}
	for tp, o := range offsets {
		g.committed[tp] = o
	}
	f.actions = append(f.actions, fmt.Sprintf("commit %s %v", group, offsets))
	return nil
}

func (f *fakeCluster) AlterShareOffsets(_ context.Context, group string, offsets map[TP]int64) error {
	f.hit()
	f.act(fmt.Sprintf("share-alter %s %v", group, offsets))
	return nil
}

func (f *fakeCluster) ElectPreferred(_ context.Context, parts []TP) (map[TP]error, error) {
	f.hit()
	f.act(fmt.Sprintf("elect %v", parts))
	out := map[TP]error{}
	for _, tp := range parts {
		out[tp] = nil
	}
	return out, nil
}

func (f *fakeCluster) Reassign(_ context.Context, moves map[TP][]int32) (map[TP]error, error) {
	f.hit()
	f.act(fmt.Sprintf("reassign %v", moves))
	out := map[TP]error{}
	for tp := range moves {
		out[tp] = nil
	}
	return out, nil
}

func (f *fakeCluster) Reassignments(context.Context) ([]Reassignment, error) {
	f.hit()
	return nil, nil
}

// fakeMetrics answers scrapes from per-broker totals a test sets.
type fakeMetrics struct {
	mu      sync.Mutex
	samples map[int32]Sample
	scrapes atomic.Int64
}

func (m *fakeMetrics) Scrape(_ context.Context, b int32) (Sample, error) {
	m.scrapes.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.samples[b]
	if !ok {
		return Sample{}, ErrNoMetrics
	}
	return s, nil
}

func (m *fakeMetrics) set(b int32, s Sample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.samples == nil {
		m.samples = map[int32]Sample{}
	}
	m.samples[b] = s
}
