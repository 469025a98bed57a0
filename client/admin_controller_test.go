package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
)

// deadControllerFake is two brokers in memory: node 0 answers, node 1 —
// the controller its metadata names — refuses every connection, as a
// killed controller does until the survivors elect another.
type deadControllerFake struct {
	dials1  atomic.Int32 // dials of node 1
	mu      sync.Mutex
	created []string // topics node 0 created
}

func (f *deadControllerFake) options() []Option {
	return []Option{func(o *options) {
		o.dial = func(_ context.Context, _ int32, addr string, _ func(int)) (brokerConn, error) {
			var port int32
			if _, err := fmt.Sscanf(addr, "fake:%d", &port); err != nil {
				return nil, fmt.Errorf("fake: bad address %q", addr)
			}
			if port == 9093 {
				f.dials1.Add(1)
				return nil, errors.New("connect: connection refused")
			}
			return &deadControllerConn{f: f, done: make(chan struct{})}, nil
		}
	}}
}

type deadControllerConn struct {
	f    *deadControllerFake
	done chan struct{}
}

func (c *deadControllerConn) Version(int16) (int16, bool) { return 0, true }
func (c *deadControllerConn) Done() <-chan struct{}       { return c.done }
func (c *deadControllerConn) Close()                      {}
func (c *deadControllerConn) Send(req kmsg.Request, timeout time.Duration, _ bool, cb wire.Callback) {
	resp, err := c.Do(context.Background(), req, timeout)
	cb(resp, err)
}

func (c *deadControllerConn) Do(_ context.Context, req kmsg.Request, _ time.Duration) (kmsg.Response, error) {
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
	}
	return nil, fmt.Errorf("fake: unexpected %s", kmsg.NameForKey(req.Key()))
}

// TestAdminDeadControllerFallsBack: a controller named by metadata that
// refuses connections is tried once, not redialled until the call's
// timeout; a live broker takes the request (brokers forward to whichever
// controller is active).
func TestAdminDeadControllerFallsBack(t *testing.T) {
	f := &deadControllerFake{}
	a, err := NewAdmin(map[string]string{
		"bootstrap.servers":      "fake:9092",
		"default.api.timeout.ms": "3000",
		"reconnect.backoff.ms":   "50", "reconnect.backoff.max.ms": "50",
	}, f.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
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
