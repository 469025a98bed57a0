package metadata

import (
	"errors"
	"slices"
	"testing"
)

// baseImage: brokers 0..2, topic "a" of 3 partitions (RF 3), topic "b"
// of 1 partition (RF 1), a topic config.
func baseImage(t testing.TB) *Image {
	recs := registerRecs(3)
	recs = append(recs, topicRecs("a", topicID(1), 3, 3, 3)...)
	recs = append(recs, topicRecs("b", topicID(2), 1, 1, 3)...)
	recs = append(recs, &ConfigRecord{Resource: ResourceTopic, Name: "a", Key: "min.insync.replicas", Value: "2"})
	img, _ := mustApply(t, Empty(), recs...)
	return img
}

func TestApplyBuildsImage(t *testing.T) {
	img := baseImage(t)
	if img.Offset() != 0 || img.NumBrokers() != 3 || img.NumTopics() != 2 || img.NumPartitions() != 4 {
		t.Fatalf("offset %d brokers %d topics %d partitions %d", img.Offset(), img.NumBrokers(), img.NumTopics(), img.NumPartitions())
	}
	a, ok := img.TopicByName("a")
	if !ok || a.ID() != topicID(1) || a.NumPartitions() != 3 {
		t.Fatalf("topic a: %v %v", a, ok)
	}
	p1, _ := img.Partition(topicID(1), 1)
	if got := p1.String(); got != "replicas=[1,2,0] isr=[1,2,0] leader=1 leader_epoch=0 partition_epoch=0" {
		t.Fatalf("a-1: %s", got)
	}
	if v, ok := img.Config(ConfigResource{ResourceTopic, "a"}, "min.insync.replicas"); !ok || v != "2" {
		t.Fatalf("config: %q %v", v, ok)
	}
	if _, ok := img.Partition(topicID(1), 3); ok {
		t.Fatal("partition 3 exists")
	}
	if names := []string{img.Topics()[0].Name(), img.Topics()[1].Name()}; !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Topics() by name: %v", names)
	}

	next, _ := mustApply(t, img,
		&PartitionChangeRecord{TopicID: topicID(1), Partition: 1, Leader: 2, ISR: []int32{2, 0}, LeaderRecovery: NoRecoveryChange, LeaderEpoch: 1, PartitionEpoch: 1},
		&FenceBrokerRecord{ID: 1, Epoch: 2},
		&ProducerIDsRecord{BrokerID: 0, BrokerEpoch: 1, Next: 1000},
		&FeatureLevelRecord{Name: "group.version", Level: 1},
		&FeatureLevelRecord{Name: "group.version", Level: 0},
	)
	if got := next.FeatureLevels(); len(got) != 1 || got["group.version"] != 0 {
		t.Fatalf("feature levels %v: the last record of a name wins", got)
	}
	if img.FeatureLevels() != nil {
		t.Fatal("the old image got feature levels")
	}
	p1n, _ := next.Partition(topicID(1), 1)
	if got := p1n.String(); got != "replicas=[1,2,0] isr=[2,0] leader=2 leader_epoch=1 partition_epoch=1" {
		t.Fatalf("a-1 after change: %s", got)
	}
	if b, _ := next.Broker(1); !b.Fenced || b.Active() {
		t.Fatalf("broker 1: %+v", b)
	}
	if next.NextProducerID() != 1000 || next.NotPreferredPartitions() != 1 || next.Offset() != 1 {
		t.Fatalf("next pid %d, not preferred %d, offset %d", next.NextProducerID(), next.NotPreferredPartitions(), next.Offset())
	}
	// The old image is untouched.
	if got := p1.String(); got != "replicas=[1,2,0] isr=[1,2,0] leader=1 leader_epoch=0 partition_epoch=0" {
		t.Fatalf("old a-1 changed: %s", got)
	}
	if b, _ := img.Broker(1); b.Fenced {
		t.Fatal("old broker 1 fenced")
	}
}

func change(topic TopicID, p, leader int32, isr []int32, leaderEpoch, partitionEpoch int32) *PartitionChangeRecord {
	return &PartitionChangeRecord{TopicID: topic, Partition: p, Leader: leader, ISR: isr, LeaderRecovery: NoRecoveryChange,
		LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch}
}

func TestApplyRejects(t *testing.T) {
	img := baseImage(t)
	a := topicID(1)
	part := func(p int32, replicas, isr []int32, leader int32) *PartitionRecord {
		return &PartitionRecord{TopicID: a, Partition: p, Replicas: replicas, ISR: isr, Leader: leader}
	}
	tests := []struct {
		name string
		rec  Record
	}{
		{"nil", nil},
		{"negative broker id", &RegisterBrokerRecord{ID: -1, Epoch: 10}},
		{"new incarnation, same epoch", &RegisterBrokerRecord{ID: 1, Incarnation: [16]byte{7}, Epoch: 2}},
		{"zero epoch", &RegisterBrokerRecord{ID: 5}},
		{"fence unknown broker", &FenceBrokerRecord{ID: 9, Epoch: 1}},
		{"fence stale epoch", &FenceBrokerRecord{ID: 1, Epoch: 1}},
		{"unregister stale epoch", &UnregisterBrokerRecord{ID: 1, Epoch: 3}},
		{"illegal topic name", &TopicRecord{Name: "a b", ID: topicID(9)}},
		{"dot topic name", &TopicRecord{Name: "..", ID: topicID(9)}},
		{"existing name", &TopicRecord{Name: "a", ID: topicID(9)}},
		{"existing id", &TopicRecord{Name: "c", ID: a}},
		{"zero id", &TopicRecord{Name: "c"}},
		{"partition of unknown topic", &PartitionRecord{TopicID: topicID(9), Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}},
		{"partition out of order", part(4, []int32{1}, []int32{1}, 1)},
		{"existing partition", part(2, []int32{1}, []int32{1}, 1)},
		{"no replicas", part(3, nil, []int32{1}, 1)},
		{"repeated replica", part(3, []int32{1, 1}, []int32{1}, 1)},
		{"negative replica", part(3, []int32{-3}, []int32{-3}, NoLeader)},
		{"empty isr", part(3, []int32{1}, nil, NoLeader)},
		{"isr outside replicas", part(3, []int32{1}, []int32{1, 2}, 1)},
		{"leader outside isr", part(3, []int32{1, 2}, []int32{1}, 2)},
		{"adding and removing overlap", &PartitionRecord{TopicID: a, Partition: 3, Replicas: []int32{1, 2}, ISR: []int32{1},
			Adding: []int32{2}, Removing: []int32{2}, Leader: 1}},
		{"bad recovery", &PartitionRecord{TopicID: a, Partition: 3, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderRecovery: 3}},
		{"change unknown partition", change(a, 7, NoLeaderChange, []int32{1}, 0, 1)},
		{"change of unknown topic", change(topicID(9), 0, NoLeaderChange, []int32{1}, 0, 1)},
		{"same partition epoch", change(a, 0, NoLeaderChange, []int32{0, 1}, 0, 0)},
		{"leader change without leader epoch bump", change(a, 0, 1, nil, 0, 1)},
		{"leader epoch going back", change(a, 0, NoLeaderChange, nil, -1, 1)},
		{"change to leader outside isr", change(a, 0, NoLeaderChange, []int32{1, 2}, 0, 1)},
		{"change to empty isr", change(a, 0, NoLeader, []int32{}, 1, 1)},
		{"remove unknown topic", &RemoveTopicRecord{ID: topicID(9)}},
		{"config of unknown topic", &ConfigRecord{Resource: ResourceTopic, Name: "zz", Key: "k", Value: "v"}},
		{"config of broker 01", &ConfigRecord{Resource: ResourceBroker, Name: "01", Key: "k", Value: "v"}},
		{"config of broker -1", &ConfigRecord{Resource: ResourceBroker, Name: "-1", Key: "k", Value: "v"}},
		{"config with empty key", &ConfigRecord{Resource: ResourceBroker, Name: "1", Value: "v"}},
		{"config of a group", &ConfigRecord{Resource: 3, Name: "g", Key: "k", Value: "v"}},
		{"producer ids going back", &ProducerIDsRecord{BrokerID: 0, Next: 0}},
		{"feature level without a name", &FeatureLevelRecord{Level: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A valid record first: the batch must be refused whole.
			ok := &UnfenceBrokerRecord{ID: 0, Epoch: 1}
			next, d, err := img.Apply(1, []Record{ok, tt.rec})
			if !errors.Is(err, ErrInvalidRecord) || next != nil || d != nil {
				t.Fatalf("Apply = %v, %v, %v; want ErrInvalidRecord", next, d, err)
			}
		})
	}
	if _, _, err := img.Apply(img.Offset()-1, nil); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("offset going back: %v", err)
	}
	// A builder that refused a record holds no trace of it.
	b := NewBuilder(img)
	if err := b.Apply(part(3, []int32{1}, []int32{1, 2}, 1)); err == nil {
		t.Fatal("builder accepted an invalid partition")
	}
	if got := b.Image(); !got.Equal(img) {
		t.Fatal("a refused record changed the builder's image")
	}
}

func TestApplySharesStructure(t *testing.T) {
	recs := registerRecs(3)
	recs = append(recs, topicRecs("big", topicID(1), 200, 3, 3)...)
	recs = append(recs, topicRecs("other", topicID(2), 10, 3, 3)...)
	img, _ := mustApply(t, Empty(), recs...)
	next, _ := mustApply(t, img, change(topicID(1), 70, 2, nil, 1, 1), change(topicID(1), 71, 0, nil, 1, 1))

	oldBig, _ := img.Topic(topicID(1))
	newBig, _ := next.Topic(topicID(1))
	oldOther, _ := img.Topic(topicID(2))
	newOther, _ := next.Topic(topicID(2))
	if oldOther != newOther {
		t.Error("an untouched topic was copied")
	}
	if oldBig == newBig {
		t.Fatal("the changed topic was not copied")
	}
	for i := range oldBig.chunks {
		same := oldBig.chunks[i] == newBig.chunks[i]
		if touched := i == 70/chunkSize; same == touched {
			t.Errorf("chunk %d: shared=%v", i, same)
		}
	}
	if p, _ := img.Partition(topicID(1), 70); p.Leader() != 1 || p.LeaderEpoch() != 0 {
		t.Errorf("old image's big-70: %s", p)
	}
	if p, _ := next.Partition(topicID(1), 70); p.Leader() != 2 || p.LeaderEpoch() != 1 {
		t.Errorf("big-70: %s", p)
	}
	if p, _ := next.Partition(topicID(1), 71); p.Leader() != 0 || p.LeaderEpoch() != 1 {
		t.Errorf("big-71: %s", p)
	}
}

func TestDelta(t *testing.T) {
	img := baseImage(t)
	a, b := topicID(1), topicID(2)
	next, d := mustApply(t, img,
		&RegisterBrokerRecord{ID: 3, Incarnation: [16]byte{4}, Epoch: 4},
		&ControlledShutdownRecord{ID: 1, Epoch: 2},
		&UnfenceBrokerRecord{ID: 0, Epoch: 1}, // already unfenced: not a change
		change(a, 0, 1, []int32{1, 2}, 1, 1),
		change(a, 0, NoLeaderChange, []int32{1, 2, 0}, 1, 2),
		change(a, 2, NoLeaderChange, []int32{2, 0}, 0, 1),
		change(a, 2, NoLeaderChange, []int32{2, 0, 1}, 0, 2), // back where it was but the epoch
		&RemoveTopicRecord{ID: b},
		&TopicRecord{Name: "c", ID: topicID(3)},
		&PartitionRecord{TopicID: topicID(3), Replicas: []int32{3}, ISR: []int32{3}, Leader: 3},
		&TopicRecord{Name: "gone", ID: topicID(4)},
		&RemoveTopicRecord{ID: topicID(4)},
		&ConfigRecord{Resource: ResourceBroker, Name: "3", Key: "k", Value: "v"},
		&ConfigRecord{Resource: ResourceTopic, Name: "a", Key: "min.insync.replicas", Value: "2"}, // same value
	)
	if len(d.Brokers) != 2 || d.Brokers[0].ID != 3 || d.Brokers[0].Old != nil || d.Brokers[1].ID != 1 || !d.Brokers[1].New.InControlledShutdown {
		t.Errorf("brokers: %+v", d.Brokers)
	}
	if len(d.TopicsCreated) != 1 || d.TopicsCreated[0].Name() != "c" {
		t.Errorf("created: %v", d.TopicsCreated)
	}
	if len(d.TopicsDeleted) != 1 || d.TopicsDeleted[0].Name() != "b" {
		t.Errorf("deleted: %v", d.TopicsDeleted)
	}
	var got []string
	for _, pd := range d.Partitions {
		got = append(got, pd.Topic.Name()+"-"+itoa(pd.Partition)+" "+pd.Old.String()+" -> "+pd.New.String())
	}
	want := []string{
		"a-0 replicas=[0,1,2] isr=[0,1,2] leader=0 leader_epoch=0 partition_epoch=0 -> replicas=[0,1,2] isr=[1,2,0] leader=1 leader_epoch=1 partition_epoch=2",
		"a-2 replicas=[2,0,1] isr=[2,0,1] leader=2 leader_epoch=0 partition_epoch=0 -> replicas=[2,0,1] isr=[2,0,1] leader=2 leader_epoch=0 partition_epoch=2",
		"c-0 replicas=[] isr=[] leader=0 leader_epoch=0 partition_epoch=0 -> replicas=[3] isr=[3] leader=3 leader_epoch=0 partition_epoch=0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("partitions:\n got %q\nwant %q", got, want)
	}
	if !d.Partitions[2].Created || d.Partitions[0].Created || !d.Partitions[0].LeaderChanged() || d.Partitions[1].LeaderChanged() {
		t.Errorf("flags: %+v", d.Partitions)
	}
	// b had no configs, so deleting it changed none; a's config was set
	// to the value it had.
	if !slices.Equal(d.Configs, []ConfigResource{{ResourceBroker, "3"}}) {
		t.Errorf("configs: %v", d.Configs)
	}
	if d.Offset != next.Offset() || d.ProducerIDs || d.Empty() {
		t.Errorf("offset %d, pids %v", d.Offset, d.ProducerIDs)
	}
	if _, d := mustApply(t, next); !d.Empty() {
		t.Errorf("empty batch: %+v", d)
	}
}

func itoa(v int32) string { return FormatIDs([]int32{v})[1 : len(FormatIDs([]int32{v}))-1] }

func TestLocal(t *testing.T) {
	img := baseImage(t)
	a, b := topicID(1), topicID(2)
	_, d := mustApply(t, img,
		change(a, 0, 1, nil, 1, 1),                        // 0 loses a-0 to 1, follows
		change(a, 1, NoLeaderChange, []int32{1, 2}, 0, 1), // 0 leaves the ISR: not a leader change
		&PartitionChangeRecord{TopicID: a, Partition: 2, Leader: NoLeaderChange, ISR: []int32{2, 1}, Replicas: []int32{2, 1},
			LeaderRecovery: NoRecoveryChange, LeaderEpoch: 1, PartitionEpoch: 1}, // 0 reassigned away
		&RemoveTopicRecord{ID: b}, // b-0 was on broker 0
		&TopicRecord{Name: "c", ID: topicID(3)},
		&PartitionRecord{TopicID: topicID(3), Replicas: []int32{0}, ISR: []int32{0}, Leader: 0},
	)
	lc := d.Local(0)
	names := func(pds []PartitionDelta) (out []string) {
		for _, pd := range pds {
			out = append(out, pd.Topic.Name()+"-"+itoa(pd.Partition))
		}
		return out
	}
	if got := names(lc.Lead); !slices.Equal(got, []string{"c-0"}) {
		t.Errorf("lead %v", got)
	}
	if got := names(lc.Follow); !slices.Equal(got, []string{"a-0"}) {
		t.Errorf("follow %v", got)
	}
	want := []StoppedReplica{{TopicID: b, TopicName: "b", Partition: 0, Deleted: true}, {TopicID: a, TopicName: "a", Partition: 2}}
	if !slices.Equal(lc.Stop, want) {
		t.Errorf("stop %+v", lc.Stop)
	}
	if lc := d.Local(1); len(lc.Lead) != 2 || len(lc.Follow) != 1 || len(lc.Stop) != 0 {
		t.Errorf("broker 1: %+v", lc)
	}
}

func TestConfigs(t *testing.T) {
	img := baseImage(t)
	a := ConfigResource{ResourceTopic, "a"}
	next, d := mustApply(t, img,
		&ConfigRecord{Resource: ResourceTopic, Name: "a", Key: "retention.ms", Value: "5"},
		&ConfigRecord{Resource: ResourceTopic, Name: "a", Key: "min.insync.replicas", Delete: true},
		&ConfigRecord{Resource: ResourceTopic, Name: "a", Key: "absent", Delete: true},
		&ConfigRecord{Resource: ResourceBroker, Name: "", Key: "log.retention.ms", Value: "7"},
	)
	if got := next.Configs(a); len(got) != 1 || got["retention.ms"] != "5" {
		t.Fatalf("a: %v", got)
	}
	if got := img.Configs(a); len(got) != 1 || got["min.insync.replicas"] != "2" {
		t.Fatalf("old a: %v", got)
	}
	if len(d.Configs) != 2 {
		t.Fatalf("changed %v", d.Configs)
	}
	if got := next.ConfigResources(); !slices.Equal(got, []ConfigResource{a, {ResourceBroker, ""}}) {
		t.Fatalf("resources %v", got)
	}
	// Deleting the topic deletes its configs.
	gone, d := mustApply(t, next, &RemoveTopicRecord{ID: topicID(1)})
	if _, ok := gone.Config(a, "retention.ms"); ok || !slices.Equal(d.Configs, []ConfigResource{a}) {
		t.Fatalf("after delete: configs changed %v", d.Configs)
	}
	// A new topic of the same name starts without them.
	again, _ := mustApply(t, gone, &TopicRecord{Name: "a", ID: topicID(7)})
	if got := again.Configs(a); got != nil {
		t.Fatalf("recreated a has %v", got)
	}
}

func TestCounters(t *testing.T) {
	img := baseImage(t)
	a := topicID(1)
	next, _ := mustApply(t, img,
		change(a, 0, NoLeader, []int32{0}, 1, 1),
		change(a, 1, 2, nil, 1, 1),
		&PartitionChangeRecord{TopicID: a, Partition: 2, Leader: NoLeaderChange, Replicas: []int32{2, 0, 1, 3},
			Adding: []int32{3}, LeaderRecovery: NoRecoveryChange, PartitionEpoch: 1},
	)
	if next.OfflinePartitions() != 1 || next.NotPreferredPartitions() != 2 || next.ReassigningPartitions() != 1 {
		t.Fatalf("offline %d not preferred %d reassigning %d", next.OfflinePartitions(), next.NotPreferredPartitions(), next.ReassigningPartitions())
	}
	gone, _ := mustApply(t, next, &RemoveTopicRecord{ID: a})
	if gone.OfflinePartitions() != 0 || gone.NotPreferredPartitions() != 0 || gone.ReassigningPartitions() != 0 || gone.NumPartitions() != 1 {
		t.Fatalf("after delete: %d %d %d %d", gone.OfflinePartitions(), gone.NotPreferredPartitions(), gone.ReassigningPartitions(), gone.NumPartitions())
	}
}

func TestBrokerLifecycle(t *testing.T) {
	img := baseImage(t)
	steps := []struct {
		rec                    Record
		fenced, shutdown, gone bool
		epoch                  int64
	}{
		{&ControlledShutdownRecord{ID: 1, Epoch: 2}, false, true, false, 2},
		{&FenceBrokerRecord{ID: 1, Epoch: 2}, true, true, false, 2},
		// A new incarnation registers fenced, with a higher epoch.
		{&RegisterBrokerRecord{ID: 1, Incarnation: [16]byte{42}, Epoch: 9, Fenced: true}, true, false, false, 9},
		// The same incarnation and epoch amends (a new rack).
		{&RegisterBrokerRecord{ID: 1, Incarnation: [16]byte{42}, Epoch: 9, Fenced: true, Rack: "r2"}, true, false, false, 9},
		{&UnfenceBrokerRecord{ID: 1, Epoch: 9}, false, false, false, 9},
		{&UnregisterBrokerRecord{ID: 1, Epoch: 9}, false, false, true, 0},
	}
	for i, s := range steps {
		var d *Delta
		img, d = mustApply(t, img, s.rec)
		b, ok := img.Broker(1)
		if ok == s.gone || ok && (b.Fenced != s.fenced || b.InControlledShutdown != s.shutdown || b.Epoch != s.epoch) {
			t.Fatalf("step %d (%s): %+v %v", i, s.rec, b, ok)
		}
		if len(d.Brokers) != 1 {
			t.Fatalf("step %d: delta %+v", i, d.Brokers)
		}
	}
	if img.HighestBrokerEpoch() != 9 {
		t.Fatalf("highest epoch %d", img.HighestBrokerEpoch())
	}
}

// TestDeltaRecreatedTopic: a batch that changes a topic, removes it and
// creates one with the same id reports the old topic deleted and the new
// one created, with only the new one's partitions.
func TestDeltaRecreatedTopic(t *testing.T) {
	img := baseImage(t)
	a := topicID(1)
	_, d := mustApply(t, img,
		change(a, 0, NoLeaderChange, []int32{0, 1}, 0, 1),
		&RemoveTopicRecord{ID: a},
		&TopicRecord{Name: "a2", ID: a},
		&PartitionRecord{TopicID: a, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
	)
	if len(d.TopicsDeleted) != 1 || d.TopicsDeleted[0].Name() != "a" || len(d.TopicsCreated) != 1 || d.TopicsCreated[0].Name() != "a2" {
		t.Fatalf("deleted %v created %v", d.TopicsDeleted, d.TopicsCreated)
	}
	if len(d.Partitions) != 1 || !d.Partitions[0].Created || d.Partitions[0].New.Leader() != 2 {
		t.Fatalf("partitions %+v", d.Partitions)
	}
}
