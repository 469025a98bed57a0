package broker

import (
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// interBrokerDials counts the connections this broker opened to the
// others: its replica fetchers' and its controller client's.
func (b *Broker) interBrokerDials() int64 {
	return b.ctl.Dials() + b.transport.Dials()
}

// TestInterBrokerConnectionsStay: under an acks=all produce load on a
// three-broker cluster (every partition RF 3, leaders on every broker),
// brokers keep the connections they opened to each other, and the
// controller's liveness watch holds its connections instead of dialling:
// once the load runs, five seconds more of it open no inter-broker
// connection, and the listeners accept at most the client's stragglers.
func TestInterBrokerConnectionsStay(t *testing.T) {
	tc := startCluster(t, 3)
	ctx := testCtx(t)
	c := newClient(t, tc.brokers[0].addr, kgo.SeedBrokers(tc.brokers[0].addr, tc.brokers[1].addr, tc.brokers[2].addr),
		kgo.DefaultProduceTopic("conns"), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	tc.createAssigned(t, ctx, c, "conns", []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{3, 1, 2}, []int32{1, 3, 2}, []int32{2, 1, 3}, []int32{3, 2, 1})
	load := func(d time.Duration) int {
		var wg sync.WaitGroup
		var mu sync.Mutex
		n := 0
		v := make([]byte, 512)
		rand.Read(v)
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			wg.Add(1)
			c.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
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
	load(3 * time.Second) // every fetcher and client connected
	// Both ends count: what each broker dialled, and what each
	// broker's listener accepted (from the other brokers and the
	// client).
	dials := func() (dialled, accepted int64, each []int64) {
		for _, tb := range tc.brokers {
			d := tb.b.interBrokerDials()
			each = append(each, d)
			dialled += d
			accepted += int64(tb.srv.Stats().ConnectionsOpened)
		}
		return dialled, accepted, each
	}
	dialled, accepted, beforeEach := dials()
	start := time.Now()
	acked := load(5 * time.Second)
	dialled2, accepted2, afterEach := dials()
	took := time.Since(start)
	t.Logf("%d records acknowledged in %v; connections dialled by each broker %v before, %v after; accepted by the three listeners %d before, %d after (%.2f/s)",
		acked, took.Round(time.Millisecond), beforeEach, afterEach, accepted, accepted2, float64(accepted2-accepted)/took.Seconds())
	if acked == 0 {
		t.Fatal("nothing acknowledged: the load did not run")
	}
	// The client may still open a connection of a kind it had not
	// needed yet (franz-go keeps produce, fetch and other requests on
	// separate connections); the liveness probe that dialled every
	// broker five times a second accepted dozens here.
	if dialled2 != dialled || accepted2-accepted > 2 {
		t.Fatalf("under a steady load brokers dialled %d connections and the listeners accepted %d", dialled2-dialled, accepted2-accepted)
	}
}
