package controller

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// TestPlacementProperties places topics over random clusters and checks
// what Kafka's algorithm guarantees: replicas are distinct active
// brokers; leadership is spread evenly (no broker leads more than one
// partition more than another); each partition spans as many racks as it
// can.
func TestPlacementProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 300 {
		nb := 1 + rng.IntN(9)
		racks := rng.IntN(4) // 0: no racks
		var brokers []*metadata.Broker
		for id := range nb {
			b := &metadata.Broker{ID: int32(10 + id*3)}
			if racks > 0 {
				b.Rack = fmt.Sprintf("r%d", rng.IntN(racks))
			}
			brokers = append(brokers, b)
		}
		rf := int16(1 + rng.IntN(nb))
		n := int32(1 + rng.IntN(40))
		start := int32(rng.IntN(5))
		name := fmt.Sprintf("case %d: %d brokers, %d racks, rf %d, %d partitions from %d", i, nb, racks, rf, n, start)
		got, err := place(rng, brokers, start, n, rf)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rackOf := map[int32]string{}
		allRacks := map[string]bool{}
		for _, b := range brokers {
			rackOf[b.ID] = b.Rack
			allRacks[b.Rack] = true
		}
		leads := map[int32]int{}
		for p, replicas := range got {
			if len(replicas) != int(rf) {
				t.Fatalf("%s: partition %d has %v", name, p, replicas)
			}
			used := map[string]bool{}
			for i, id := range replicas {
				if _, ok := rackOf[id]; !ok || slices.Contains(replicas[i+1:], id) {
					t.Fatalf("%s: partition %d has %v", name, p, replicas)
				}
				used[rackOf[id]] = true
			}
			if racks > 0 && len(used) < min(int(rf), len(allRacks)) {
				t.Fatalf("%s: partition %d spans racks %v of %v", name, p, used, allRacks)
			}
			leads[replicas[0]]++
		}
		lo, hi := int(n), 0
		for _, b := range brokers {
			lo, hi = min(lo, leads[b.ID]), max(hi, leads[b.ID])
		}
		if hi-lo > 1 {
			t.Fatalf("%s: leadership from %d to %d per broker: %v", name, lo, hi, leads)
		}
	}
	if _, err := place(rng, nil, 0, 1, 1); err == nil {
		t.Fatal("placed a partition on no broker")
	}
}

// cluster is a harness with brokers 1..n registered and unfenced.
func cluster(t *testing.T, n int) *harness {
	h := newHarness(t, Config{})
	for id := range int32(n) {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID = id + 1
		req.IncarnationID = [16]byte{byte(id + 1)}
		resp, recs := h.c.RegisterBroker(req)
		if resp.ErrorCode != 0 {
			t.Fatalf("register %d: %s", id+1, errName(resp.ErrorCode))
		}
		h.commitQuiet(recs)
	}
	for id := range int32(n) {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id+1, int64(id+1), h.committed.Offset()
		_, recs := h.c.Heartbeat(hb)
		h.commitQuiet(recs)
	}
	return h
}

func (h *harness) commitQuiet(recs []metadata.Record) {
	h.t.Helper()
	var out strings.Builder
	h.commit(h.t, h.c.Image(), recs, &out)
}

func (h *harness) mustCreate(name string, partitions int32, rf int16) metadata.TopicID {
	h.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, rf
	req.Topics = append(req.Topics, rt)
	resp, recs := h.c.CreateTopics(req)
	if resp.Topics[0].ErrorCode != 0 {
		h.t.Fatalf("create %s: %s", name, errName(resp.Topics[0].ErrorCode))
	}
	h.commitQuiet(recs)
	return resp.Topics[0].TopicID
}

func TestAlterPartitionUnknowns(t *testing.T) {
	h := cluster(t, 3)
	id := h.mustCreate("t", 1, 3)
	p, _ := h.c.Image().Partition(id, 0)
	leader, _ := h.c.Image().Broker(p.Leader())
	tests := []struct {
		name    string
		version int16
		topic   string
		id      metadata.TopicID
		part    int32
		want    *kerr.Error
	}{
		{"unknown id", 3, "", metadata.TopicID{9}, 0, kerr.UnknownTopicID},
		{"unknown name", 1, "nope", metadata.TopicID{}, 0, kerr.UnknownTopicOrPartition},
		{"unknown partition by id", 3, "", id, 5, kerr.UnknownTopicOrPartition},
		{"unknown partition by name", 0, "t", metadata.TopicID{}, 5, kerr.UnknownTopicOrPartition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrAlterPartitionRequest()
			req.Version, req.BrokerID, req.BrokerEpoch = tt.version, leader.ID, leader.Epoch
			rp := kmsg.NewAlterPartitionRequestTopicPartition()
			rp.Partition, rp.NewISR = tt.part, []int32{leader.ID}
			req.Topics = []kmsg.AlterPartitionRequestTopic{{Topic: tt.topic, TopicID: tt.id, Partitions: []kmsg.AlterPartitionRequestTopicPartition{rp}}}
			resp, recs := h.c.AlterPartition(req)
			if got := resp.Topics[0].Partitions[0].ErrorCode; got != tt.want.Code || len(recs) != 0 {
				t.Fatalf("error %s, %d records; want %s", errName(got), len(recs), tt.want.Message)
			}
		})
	}
}

func TestRegistrationChecks(t *testing.T) {
	h := newHarness(t, Config{})
	h.reset(Config{ClusterID: "c1"}, 1)
	tests := []struct {
		name string
		mod  func(*kmsg.BrokerRegistrationRequest)
		want *kerr.Error
	}{
		{"cluster id", func(r *kmsg.BrokerRegistrationRequest) { r.ClusterID = "c2" }, kerr.InconsistentClusterID},
		{"zk broker", func(r *kmsg.BrokerRegistrationRequest) { r.IsMigratingZkBroker = true }, kerr.BrokerIDNotRegistered},
		{"negative id", func(r *kmsg.BrokerRegistrationRequest) { r.BrokerID = -1 }, kerr.InvalidRegistration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrBrokerRegistrationRequest()
			req.BrokerID, req.ClusterID = 1, "c1"
			tt.mod(req)
			resp, recs := h.c.RegisterBroker(req)
			if resp.ErrorCode != tt.want.Code || recs != nil {
				t.Fatalf("error %s, records %v", errName(resp.ErrorCode), recs)
			}
		})
	}
}

func TestCreateTopicsRequestChecks(t *testing.T) {
	h := cluster(t, 3)
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"dup", "dup", "ok"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 2, 2
		req.Topics = append(req.Topics, rt)
	}
	empty := ""
	req.Topics[2].Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "retention.ms", Value: &empty}, {Name: "cleanup.policy"}}
	resp, recs := h.c.CreateTopics(req)
	got := []string{errName(resp.Topics[0].ErrorCode), errName(resp.Topics[1].ErrorCode), errName(resp.Topics[2].ErrorCode)}
	if !slices.Equal(got, []string{"INVALID_REQUEST", "INVALID_REQUEST", "ok"}) {
		t.Fatalf("errors %v", got)
	}
	h.commitQuiet(recs)
	img := h.c.Image()
	if _, ok := img.TopicByName("dup"); ok {
		t.Fatal("a duplicated name was created")
	}
	tp, ok := img.TopicByName("ok")
	if !ok || tp.ID() != resp.Topics[2].TopicID || resp.Topics[2].NumPartitions != 2 || resp.Topics[2].ReplicationFactor != 2 {
		t.Fatalf("ok: %+v", resp.Topics[2])
	}
	// A null config value is not recorded; an empty one is.
	if cfg := img.Configs(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "ok"}); len(cfg) != 1 || cfg["retention.ms"] != "" {
		t.Fatalf("configs %v", cfg)
	}
}

func TestDeleteTopicsByID(t *testing.T) {
	h := cluster(t, 1)
	id := h.mustCreate("a", 1, 1)
	name := "a"
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{
		{Topic: &name, TopicID: id},       // both: refused
		{TopicID: metadata.TopicID{1, 2}}, // unknown id
		{TopicID: id},                     // deleted
		{Topic: &name},                    // the same topic by name: answered, deleted once
	}
	resp, recs := h.c.DeleteTopics(req)
	var got []string
	for _, st := range resp.Topics {
		got = append(got, errName(st.ErrorCode))
	}
	if !slices.Equal(got, []string{"INVALID_REQUEST", "UNKNOWN_TOPIC_ID", "ok", "ok"}) || len(recs) != 1 {
		t.Fatalf("errors %v, %d records", got, len(recs))
	}
	if st := resp.Topics[2]; st.Topic == nil || *st.Topic != "a" {
		t.Fatalf("by id: the answer does not name the topic: %+v", st)
	}
	h.commitQuiet(recs)

	h.reset(Config{DisableTopicDeletion: true}, 1)
	h.mustCreate("b", 1, 1)
	req.Version = 5
	req.TopicNames = []string{"b"}
	resp, recs = h.c.DeleteTopics(req)
	if resp.Topics[0].ErrorCode != kerr.TopicDeletionDisabled.Code || len(recs) != 0 {
		t.Fatalf("deletion disabled: %s", errName(resp.Topics[0].ErrorCode))
	}
}

// TestFailoverIsConservative: a controller built from a committed image
// does not know where brokers registered or shut down, so it requires
// them to have applied that whole image.
func TestFailoverIsConservative(t *testing.T) {
	h := cluster(t, 2)
	h.mustCreate("t", 4, 2)
	// Broker 2 asks to shut down; broker 1 has seen the batch.
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset, hb.WantShutdown = 2, 2, h.committed.Offset(), true
	_, recs := h.c.Heartbeat(hb)
	h.commitQuiet(recs)
	shutdownAt := h.committed.Offset()
	h.mustCreate("u", 1, 1) // the log moves on

	h.reset(Config{}, 3)
	for _, id := range []int32{1, 2} {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, int64(id), shutdownAt
		resp, recs := h.c.Heartbeat(hb)
		if resp.ShouldShutdown || len(recs) != 0 {
			t.Fatalf("broker %d at the shutdown offset, after a failover: %+v", id, resp)
		}
	}
	for _, id := range []int32{1, 2} {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, int64(id), h.committed.Offset()
		resp, recs := h.c.Heartbeat(hb)
		if id == 2 && (!resp.ShouldShutdown || len(recs) != 1) {
			t.Fatalf("broker 2 caught up with the image: %+v, %d records", resp, len(recs))
		}
		h.commitQuiet(recs)
	}
}

func TestCommittedAdoptsTheImage(t *testing.T) {
	h := cluster(t, 3)
	// Two decisions in flight: the view holds both before either commits.
	r1 := kmsg.NewPtrCreateTopicsRequest()
	r1.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "a", NumPartitions: 1, ReplicationFactor: 1}}
	_, recs1 := h.c.CreateTopics(r1)
	r2 := kmsg.NewPtrCreateTopicsRequest()
	r2.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "a", NumPartitions: 1, ReplicationFactor: 1}, {Topic: "b", NumPartitions: 1, ReplicationFactor: 1}}
	resp2, recs2 := h.c.CreateTopics(r2)
	if resp2.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code || h.c.Pending() != 2 {
		t.Fatalf("second decision: %s, %d pending", errName(resp2.Topics[0].ErrorCode), h.c.Pending())
	}
	view := h.c.Image()
	apply := func(recs []metadata.Record) (*metadata.Image, *metadata.Delta) {
		next, d, err := h.committed.Apply(h.committed.Offset()+1, recs)
		if err != nil {
			t.Fatal(err)
		}
		h.committed = next
		return next, d
	}
	img1, d1 := apply(recs1)
	h.c.Committed(img1, d1)
	if h.c.Image() != view || h.c.Pending() != 1 {
		t.Fatal("the view changed while a batch was in flight")
	}
	img2, d2 := apply(recs2)
	h.c.Committed(img2, d2)
	if h.c.Image() != img2 || h.c.Pending() != 0 || imageText(view) != imageText(img2) {
		t.Fatal("the controller did not adopt the committed image")
	}
}

func TestNextDeadline(t *testing.T) {
	h := cluster(t, 2)
	start := h.now
	if got := h.c.NextDeadline(); !got.Equal(start.Add(9 * time.Second)) {
		t.Fatalf("next deadline %v after start", got.Sub(start))
	}
	h.now = h.now.Add(3 * time.Second)
	for _, id := range []int32{1, 2} {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = id, int64(id), h.committed.Offset()
		h.c.Heartbeat(hb)
	}
	if got := h.c.NextDeadline(); !got.Equal(start.Add(12 * time.Second)) {
		t.Fatalf("next deadline %v after start", got.Sub(start))
	}
	h.reset(Config{DisableAutoLeaderRebalance: true, SessionTimeout: time.Hour}, 1)
	if got := h.c.NextDeadline(); !got.Equal(h.now.Add(time.Hour)) {
		t.Fatalf("without rebalance: %v", got.Sub(h.now))
	}
}
