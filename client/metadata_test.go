package client

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func metaResp(leader, epoch int32, topicErr int16) *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataResponse()
	r.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "a", Port: 1}, {NodeID: 2, Host: "b", Port: 2}}
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.TopicID, t.ErrorCode = kmsg.StringPtr("t"), [16]byte{9}, topicErr
	if topicErr == 0 {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition, p.Leader, p.LeaderEpoch = 0, leader, epoch
		t.Partitions = append(t.Partitions, p)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func TestMetadataMerge(t *testing.T) {
	now := time.Now()
	base := emptyMetadata().merged(metaResp(1, 5, 0), false, now)
	tests := []struct {
		name       string
		resp       *kmsg.MetadataResponse
		wantLeader int32
		wantEpoch  int32
	}{
		{"newer epoch moves the leader", metaResp(2, 6, 0), 2, 6},
		{"older epoch from a lagging broker is ignored", metaResp(2, 4, 0), 1, 5},
		{"transient topic error keeps the layout", metaResp(0, 0, 5 /* LEADER_NOT_AVAILABLE */), 1, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base.merged(tt.resp, false, now)
			l, e := m.leader("t", 0)
			if l != tt.wantLeader || e != tt.wantEpoch {
				t.Fatalf("leader %d epoch %d, want %d %d", l, e, tt.wantLeader, tt.wantEpoch)
			}
			if m.byID[[16]byte{9}] != "t" {
				t.Fatal("topic id index lost")
			}
		})
	}
	// A response covering every topic drops topics it does not list.
	all := kmsg.NewPtrMetadataResponse()
	if m := base.merged(all, true, now); len(m.topics) != 0 {
		t.Fatalf("full response kept %d topics", len(m.topics))
	}
	if m := base.merged(all, false, now); len(m.topics) != 1 {
		t.Fatal("partial response dropped a topic")
	}
}

func TestBackoff(t *testing.T) {
	half := func() uint32 { return 1 << 31 } // jitter factor 1.0
	tests := []struct {
		attempts int
		want     time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {4, 800 * time.Millisecond}, {5, time.Second}, {30, time.Second}}
	for _, tt := range tests {
		if got := backoff(100*time.Millisecond, time.Second, tt.attempts, half); got != tt.want {
			t.Errorf("attempt %d: %v, want %v", tt.attempts, got, tt.want)
		}
	}
	lo := backoff(100*time.Millisecond, time.Second, 1, func() uint32 { return 0 })
	hi := backoff(100*time.Millisecond, time.Second, 1, func() uint32 { return 1<<32 - 1 })
	if lo != 80*time.Millisecond || hi < 119*time.Millisecond || hi > 120*time.Millisecond {
		t.Fatalf("jitter range [%v, %v], want [80ms, 120ms]", lo, hi)
	}
}

// TestOneConnectionPerBroker: the bootstrap connection becomes the broker's
// connection once metadata names the broker at that address.
func TestOneConnectionPerBroker(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	sim := newSimCluster(clock, "t", []*simBroker{{id: 0}})
	dials := 0
	opts := append(sim.options(1), func(o *options) {
		inner := o.dial
		o.dial = func(ctx context.Context, node int32, addr string, onWrite func(int)) (brokerConn, error) {
			dials++
			return inner(ctx, node, addr, onWrite)
		}
	})
	// The simulated broker 0 advertises sim:9092, the bootstrap address.
	c := newCore(commonConfig{bootstrap: []string{"sim:9092"}, requestTimeout: time.Second, dialTimeout: time.Second}, buildOptions(opts), false)
	defer c.close()
	if _, err := c.waitTopic(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	if conn := c.tryConn(0); conn == nil {
		t.Fatal("broker 0 has no connection")
	}
	if dials != 1 {
		t.Fatalf("%d dials, want 1: the bootstrap connection should serve broker 0", dials)
	}
}
