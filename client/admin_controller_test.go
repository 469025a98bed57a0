package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
)

// twoNodeFake is two brokers in memory, nodes 0 and 1; metadata names
// node 1 the controller. A dead node refuses every connection, as a
// killed broker does. DescribeConfigs answers with the node's own id.
type twoNodeFake struct {
	dead1   bool
	refuse0 atomic.Int32 // dials of node 0 (the bootstrap address) still to refuse
	dials1  atomic.Int32 // dials of node 1
	mu      sync.Mutex
	created []string // topics created (on any node)
}

func (f *twoNodeFake) options() []Option {
	return []Option{func(o *options) {
		o.dial = func(_ context.Context, _ int32, addr string, _ func(int)) (brokerConn, error) {
			var port int32
			if _, err := fmt.Sscanf(addr, "fake:%d", &port); err != nil {
				return nil, fmt.Errorf("fake: bad address %q", addr)
			}
			node := port - 9092
			if node == 0 && f.refuse0.Add(-1) >= 0 {
				return nil, errors.New("connect: connection refused")
			}
			if node == 1 {
				f.dials1.Add(1)
				if f.dead1 {
					return nil, errors.New("connect: connection refused")
				}
			}
			return &twoNodeConn{f: f, node: node, done: make(chan struct{})}, nil
		}
	}}
}

type twoNodeConn struct {
	f    *twoNodeFake
	node int32
	done chan struct{}
}

func (c *twoNodeConn) Version(int16) (int16, bool) { return 0, true }
func (c *twoNodeConn) Done() <-chan struct{}       { return c.done }
func (c *twoNodeConn) Close()                      {}
func (c *twoNodeConn) Send(req kmsg.Request, timeout time.Duration, _ bool, cb wire.Callback) {
	resp, err := c.Do(context.Background(), req, timeout)
	cb(resp, err)
}

func (c *twoNodeConn) Do(_ context.Context, req kmsg.Request, _ time.Duration) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		resp := kmsg.NewPtrMetadataResponse()
		for id := range int32(2) {
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = id, "fake", 9092+id
			resp.Brokers = append(resp.Brokers, b)
		}
		resp.ControllerID = 1
		return resp, nil
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		c.f.mu.Lock()
		defer c.f.mu.Unlock()
		for _, t := range r.Topics {
			c.f.created = append(c.f.created, t.Topic)
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DescribeConfigsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			cfg := kmsg.NewDescribeConfigsResponseResourceConfig()
			cfg.Name, cfg.Value = "answered.by", kmsg.StringPtr(strconv.Itoa(int(c.node)))
			rr.Configs = append(rr.Configs, cfg)
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("fake: unexpected %s", kmsg.NameForKey(req.Key()))
}

func newTwoNodeAdmin(t *testing.T, f *twoNodeFake) *Admin {
	t.Helper()
	a, err := NewAdmin(map[string]string{
		"bootstrap.servers":      "fake:9092",
		"default.api.timeout.ms": "3000",
		"reconnect.backoff.ms":   "50", "reconnect.backoff.max.ms": "50",
	}, f.options()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// TestAdminDeadControllerFallsBack: a controller named by metadata that
// refuses connections is tried once, not redialled until the call's
// timeout; a live broker takes the request (brokers forward to whichever
// controller is active).
func TestAdminDeadControllerFallsBack(t *testing.T) {
	f := &twoNodeFake{dead1: true}
	a := newTwoNodeAdmin(t, f)
	if err := a.CreateTopics(context.Background(), TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 1}); err != nil {
		t.Fatalf("CreateTopics with the named controller dead: %v", err)
	}
	f.mu.Lock()
	created := append([]string(nil), f.created...)
	f.mu.Unlock()
	if len(created) != 1 || created[0] != "t" {
		t.Fatalf("created on the live broker: %v", created)
	}
	// With 50 ms back-offs, redialling the dead controller until the
	// 3 s timeout would take dozens of dials.
	if n := f.dials1.Load(); n > 3 {
		t.Fatalf("the dead controller was dialled %d times", n)
	}
}

// TestAdminDescribeBrokerConfigsAsksThatBroker: a broker's configs
// (static ones differ per node) are described by that broker, as Kafka's
// admin client does; other resources by any broker.
func TestAdminDescribeBrokerConfigsAsksThatBroker(t *testing.T) {
	a := newTwoNodeAdmin(t, &twoNodeFake{})
	ctx := context.Background()
	for _, node := range []string{"1", "0", "1"} {
		cfgs, err := a.DescribeConfigs(ctx, BrokerResource, node)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfgs) != 1 || cfgs[0].Value == nil || *cfgs[0].Value != node {
			t.Fatalf("broker %s described by %+v", node, cfgs)
		}
	}
	// The cluster-wide default (empty name) and topics: any broker.
	if _, err := a.DescribeConfigs(ctx, BrokerResource, ""); err != nil {
		t.Fatal(err)
	}
}

// TestAdminWaitsForARefusingBrokerWhenNoneAnswers: a request any broker
// may answer first skips brokers that refuse connections, but when none
// answers it waits out the back-off and asks again (a broker still
// starting up), instead of failing at once.
func TestAdminWaitsForARefusingBrokerWhenNoneAnswers(t *testing.T) {
	f := &twoNodeFake{dead1: true}
	f.refuse0.Store(1)
	a := newTwoNodeAdmin(t, f)
	cfgs, err := a.DescribeConfigs(context.Background(), TopicResource, "t")
	if err != nil {
		t.Fatalf("DescribeConfigs with the only live broker refusing its first dial: %v", err)
	}
	if len(cfgs) != 1 || cfgs[0].Value == nil || *cfgs[0].Value != "0" {
		t.Fatalf("described by %+v, want node 0", cfgs)
	}
	if f.refuse0.Load() >= 0 {
		t.Fatal("node 0's first dial was never refused: the test did not exercise the second pass")
	}
}
