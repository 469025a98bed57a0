package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/localcluster"
	"weir/internal/testport"
)

// frontProxy forwards connections to one broker, as a proxy or load
// balancer in front of it would, and notes the client id of each
// connection's first request.
type frontProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	ids    []string
	conns  []net.Conn
	wg     sync.WaitGroup
}

func newFrontProxy(t *testing.T, target string) *frontProxy {
	t.Helper()
	ln, err := net.Listen("tcp", testport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	p := &frontProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *frontProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			// The first frame: size, key, version, correlation id, then
			// the client id (int16 length and bytes).
			head := make([]byte, 14)
			if _, err := io.ReadFull(c, head); err == nil {
				n := int(int16(binary.BigEndian.Uint16(head[12:])))
				id := make([]byte, max(n, 0))
				io.ReadFull(c, id)
				p.mu.Lock()
				p.ids = append(p.ids, string(id))
				p.mu.Unlock()
				up.Write(head)
				up.Write(id)
			}
			done := make(chan struct{})
			go func() { io.Copy(c, up); close(done) }()
			io.Copy(up, c)
			up.Close()
			c.Close()
			<-done
		}()
	}
}

func (p *frontProxy) clientIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...)
}

func (p *frontProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestBrokersBypassTheAdvertisedProxy: every broker advertises a proxy in
// front of it (--advertise), which clients are told and go through; the
// brokers reach each other on their inter-broker listener directly, so
// under an acks=all load on RF 3 partitions no connection through a
// proxy is a broker's (replica fetches, controller requests, liveness),
// and the proxies see no new connection once the load runs.
func TestBrokersBypassTheAdvertisedProxy(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	var proxies []*frontProxy
	c := startCluster(t, ctx, 3, func(_ string, spec *localcluster.Spec) {
		for _, p := range proxies {
			p.close()
		}
		proxies, spec.NodeArgs = nil, nil
		for n := 1; n <= 3; n++ {
			p := newFrontProxy(t, spec.KafkaAddr(n))
			proxies = append(proxies, p)
			spec.NodeArgs = append(spec.NodeArgs, []string{"--advertise", p.ln.Addr().String()})
		}
	})
	var seeds []string
	for _, p := range proxies {
		seeds = append(seeds, p.ln.Addr().String())
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic("fronted"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	eventually(t, ctx, 30*time.Second, "topic created", func(ctx context.Context) error {
		return c.createTopic(ctx, []int{1, 2, 3}, "fronted", 6, 3)
	})
	load := func(d time.Duration) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		n := 0
		v := make([]byte, 512)
		rand.Read(v)
		for end := time.Now().Add(d); time.Now().Before(end); {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err == nil {
					mu.Lock()
					n++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return n
	}
	load(3 * time.Second)
	count := func() (all int, brokers []string) {
		for _, p := range proxies {
			for _, id := range p.clientIDs() {
				all++
				if strings.HasPrefix(id, "weir-") {
					brokers = append(brokers, id)
				}
			}
		}
		return all, brokers
	}
	before, _ := count()
	acked := load(5 * time.Second)
	after, brokers := count()
	t.Logf("%d records acknowledged through the proxies; connections through them %d before the measured load, %d after", acked, before, after)
	if acked == 0 {
		t.Fatal("nothing acknowledged")
	}
	if len(brokers) > 0 {
		t.Fatalf("brokers connected through the advertised proxies: %v", brokers)
	}
	if after-before > 2 {
		t.Fatalf("%d new connections through the proxies under a steady load", after-before)
	}
}
