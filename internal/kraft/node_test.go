package kraft

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/quorum"
)

// TestSingleNode: one node is a one-voter quorum on the same path. Its
// broker registers and is unfenced through the local client, topics are
// created, configured, deleted through the controller and seen in the
// image, and the state survives a restart.
func TestSingleNode(t *testing.T) {
	dir, raftAddr := t.TempDir(), freeAddr(t)
	cfg := Config{ID: 1, Dir: dir, RaftAddr: raftAddr, Voters: []quorum.Peer{{ID: 1, Addr: raftAddr}}, Logger: testLogger(t)}
	n, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { n.Close() }()
	cl := NewLocalClient(n)
	life, err := StartLifecycle(LifecycleConfig{BrokerID: 1, Client: cl, Metadata: n.FSM(), Logger: testLogger(t),
		Listeners: []kmsg.BrokerRegistrationRequestListener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}})
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()
	select {
	case <-life.Unfenced():
	case <-time.After(10 * time.Second):
		t.Fatalf("broker not unfenced, state %v", life.State())
	}

	createTopics(t, cl, "orders", 3, 4, 1)
	img := n.Image()
	if img.NumTopics() != 3 || img.NumPartitions() != 12 {
		t.Fatalf("image has %d topics %d partitions after the reply, want 3 and 12", img.NumTopics(), img.NumPartitions())
	}
	tp, ok := img.TopicByName("orders0001")
	if !ok {
		t.Fatal("orders0001 missing")
	}
	p, _ := tp.Partition(3)
	if p.Leader() != 1 || len(p.ISR()) != 1 {
		t.Fatalf("partition 3: %v", p)
	}

	// Creating it again: TOPIC_ALREADY_EXISTS, and nothing written.
	before := n.Image().Offset()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders0001", 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Admin(ctxTimeout(t, 5*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("duplicate create: code %d", code)
	}
	if n.Image().Offset() != before {
		t.Fatal("a refused create wrote a batch")
	}

	// Configs: SET then APPEND, recorded in the image.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "orders0000"
	for _, op := range []struct {
		op  kmsg.IncrementalAlterConfigOp
		k   string
		val string
	}{{kmsg.IncrementalAlterConfigOpSet, "retention.ms", "1000"}, {kmsg.IncrementalAlterConfigOpAppend, "cleanup.policy", "compact"}} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = op.op, op.k, kmsg.StringPtr(op.val)
		res.Configs = append(res.Configs, c)
	}
	alter.Resources = append(alter.Resources, res)
	aresp, err := cl.Admin(ctxTimeout(t, 5*time.Second), alter)
	if err != nil {
		t.Fatal(err)
	}
	if code := aresp.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode; code != 0 {
		t.Fatalf("alter configs: code %d", code)
	}
	topicRes := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "orders0000"}
	if v, _ := n.Image().Config(topicRes, "retention.ms"); v != "1000" {
		t.Fatalf("retention.ms = %q", v)
	}
	if v, _ := n.Image().Config(topicRes, "cleanup.policy"); v != "compact" {
		t.Fatalf("cleanup.policy = %q", v)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.Version = 6
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("orders0002")
	del.Topics = append(del.Topics, dt)
	dresp, err := cl.Admin(ctxTimeout(t, 5*time.Second), del)
	if err != nil {
		t.Fatal(err)
	}
	if code := dresp.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete: code %d", code)
	}
	if _, ok := n.Image().TopicByName("orders0002"); ok || n.Image().NumTopics() != 2 {
		t.Fatal("deleted topic still in the image")
	}

	// Restart: the image comes back from the log, the controller from it.
	want := n.Image()
	life.Close()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Controller(); !errors.Is(err, kerr.NotController) {
		t.Fatalf("closed node's controller: %v", err)
	}
	n, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "state restored", func() bool { return n.Image().Equal(want) })
	eventually(t, 10*time.Second, "controller active again", func() bool { _, err := n.Controller(); return err == nil })
	createTopics(t, NewLocalClient(n), "after-restart", 1, 2, 1)
}

// TestNotControllerAnswers: a node that does not run the controller
// answers every controller key with NOT_CONTROLLER, and the local client
// gives that answer back when its context ends.
func TestNotControllerAnswers(t *testing.T) {
	raftAddr := freeAddr(t)
	other := freeAddr(t)
	// Node 1 is one of two voters whose peer never starts: no quorum,
	// no leader.
	n, err := Open(Config{ID: 1, Dir: t.TempDir(), RaftAddr: raftAddr, Voters: []quorum.Peer{{ID: 1, Addr: raftAddr}, {ID: 2, Addr: other}}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for _, k := range ControllerKeys {
		req := sampleRequest(t, k.Key, k.Max)
		resp, err := n.HandleControllerRequest(context.Background(), k.Key, req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(k.Key), err)
		}
		if resp.Key() != k.Key || resp.GetVersion() != k.Max || !IsNotController(resp) {
			t.Fatalf("%s: response key %d v%d %#v: want NOT_CONTROLLER", kmsg.NameForKey(k.Key), resp.Key(), resp.GetVersion(), resp)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	resp, err := NewLocalClient(n).Heartbeat(ctx, hb)
	if err != nil || resp.ErrorCode != kerr.NotController.Code {
		t.Fatalf("local client without a controller: %+v %v", resp, err)
	}
	if _, err := n.HandleControllerRequest(context.Background(), 0, kmsg.NewPtrProduceRequest()); !errors.Is(err, ErrUnsupportedRequest) {
		t.Fatalf("produce: %v", err)
	}
}

// TestAdminAtSaysWhereTheOutcomeCommitted: a request sent over the Kafka
// protocol at a flexible version comes back with the metadata offset of
// its batch (and without weir's tag, which is for the forwarding broker
// only), a decision that writes nothing with the offset it was answered
// at, the local path with the same offsets, and a version without tagged
// fields with none.
func TestAdminAtSaysWhereTheOutcomeCommitted(t *testing.T) {
	raftAddr := freeAddr(t)
	n, err := Open(Config{ID: 1, Dir: t.TempDir(), RaftAddr: raftAddr, Voters: []quorum.Peer{{ID: 1, Addr: raftAddr}}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	lis := startListener(t, n, "127.0.0.1:0")
	defer lis.stop()
	remote := NewKafkaClient(KafkaClientConfig{Leader: func() int32 { return 1 },
		Resolve: func(int32) (string, bool) { return lis.srv.Addr().String(), true }})
	defer remote.Close()
	local := NewLocalClient(n)

	// A cluster-wide broker config: written without any broker.
	create := func(value string, version int16) kmsg.Request {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = version
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "log.retention.ms", kmsg.StringPtr(value)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return req
	}
	// The same as a legacy AlterConfigs, whose v1 has no tagged fields.
	replace := func(value string, version int16) kmsg.Request {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = version
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeBroker
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "log.retention.ms", kmsg.StringPtr(value)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		return req
	}
	for _, tc := range []struct {
		name    string
		cl      ControllerClient
		req     kmsg.Request
		written bool // the request writes a batch
		offset  bool // the answer says where
	}{
		{"remote, flexible", remote, create("1", 0), true, true},
		{"remote, nothing written", remote, create("1", 0), false, true},
		{"remote, without tagged fields", remote, replace("2", 1), true, false},
		{"local", local, create("3", 0), true, true},
		{"local, nothing written", local, create("3", 0), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := n.Image().Offset()
			resp, offset, err := tc.cl.AdminAt(ctxTimeout(t, 10*time.Second), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			after := n.Image().Offset()
			if tc.written != (after > before) {
				t.Fatalf("offset %d -> %d, written %v", before, after, tc.written)
			}
			switch {
			case !tc.offset && offset != -1:
				t.Fatalf("offset %d, want none", offset)
			case tc.offset && offset != after:
				t.Fatalf("offset %d, want %d (the image's)", offset, after)
			}
			if tags := responseTags(resp); tags.Len() != 0 {
				t.Fatalf("the answer keeps %d tags", tags.Len())
			}
		})
	}
}
