package chaos

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
	"weir/internal/testport"
)

// isrBroker is a one-broker cluster that answers ApiVersions and, for
// the test topic, Metadata with the ISR it is set to: node 1 leads every
// partition of replicas 1, 2 and 3.
type isrBroker struct {
	host string
	port int32

	mu       sync.Mutex
	isr      []int32
	metadata int // Metadata requests answered
}

func (b *isrBroker) set(isr ...int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.isr = isr
}

func (b *isrBroker) answered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.metadata
}

func (b *isrBroker) Versions() []server.APIVersionRange {
	return []server.APIVersionRange{{Key: 18, Min: 0, Max: 4}, {Key: 3, Min: 0, Max: 12}}
}

func (b *isrBroker) Serve(_ context.Context, req *server.Request) *server.Reply {
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := body.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, v := range b.Versions() {
			k := kmsg.NewApiVersionsResponseApiKey()
			k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
		return server.Ready(resp)
	case *kmsg.MetadataRequest:
		resp := body.ResponseKind().(*kmsg.MetadataResponse)
		br := kmsg.NewMetadataResponseBroker()
		br.NodeID, br.Host, br.Port = 1, b.host, b.port
		resp.Brokers = append(resp.Brokers, br)
		resp.ControllerID = 1
		b.mu.Lock()
		b.metadata++
		isr := b.isr
		b.mu.Unlock()
		for _, rt := range body.Topics {
			if rt.Topic == nil || *rt.Topic != topic {
				continue
			}
			t := kmsg.NewMetadataResponseTopic()
			t.Topic, t.TopicID = kmsg.StringPtr(topic), [16]byte{1}
			for p := range int32(partitions) {
				mp := kmsg.NewMetadataResponseTopicPartition()
				mp.Partition, mp.Leader, mp.Replicas, mp.ISR = p, 1, []int32{1, 2, 3}, isr
				t.Partitions = append(t.Partitions, mp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return server.Ready(resp)
	}
	return server.CloseConnection()
}

// startISRBroker serves an isrBroker on a test port until the test ends.
func startISRBroker(t *testing.T) *isrBroker {
	t.Helper()
	b := &isrBroker{}
	srv, err := server.New(server.Config{Addr: testport.Addr(t), Dispatcher: b, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	b.host, b.port = host, int32(p)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
	})
	return b
}

// The health check that times a node's return to the ISR reads the ISR
// the cluster has at the moment it asks: after a read that saw a node
// out of the ISR, the next read sees it back at once, not the client's
// cached answer (kgo keeps metadata for MetadataMinAge, 5 s, which made
// the pause loop report "full ISR 5.0x s after resuming" for a node back
// in the ISR within milliseconds).
func TestHealthyReadsCurrentISR(t *testing.T) {
	b := startISRBroker(t)
	b.set(1, 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(net.JoinHostPort(b.host, strconv.Itoa(int(b.port)))))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	c := &chaosCluster{t: t, cl: cl, adm: kadm.NewClient(cl)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := c.healthy(ctx); err == nil {
		t.Fatal("healthy with every ISR [1 2] of replicas [1 2 3]")
	}
	b.set(1, 2, 3)
	before := b.answered()
	if err := c.healthy(ctx); err != nil {
		t.Fatalf("not healthy right after every ISR became [1 2 3]: %v", err)
	}
	if b.answered() == before {
		t.Fatal("the health check sent no Metadata request")
	}
	b.set(1, 3)
	ls, err := c.layoutsFrom(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for p, l := range ls {
		if l.leader != 1 || len(l.isr) != 2 || l.isr[1] != 3 {
			t.Fatalf("node 1 says partition %d: leader %d, ISR %v; want leader 1, ISR [1 3]", p, l.leader, l.isr)
		}
	}
}
