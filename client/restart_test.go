package client

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// TestIntegrationBrokerRestart kills a dedicated weir broker with SIGKILL
// while an idempotent producer is sending and starts it again on the same
// port and data: every record must be acknowledged exactly once, in order
// per partition, through reconnection and retries.
func TestIntegrationBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a broker process")
	}
	if getenvBootstrap() != "" {
		t.Skip("restarts its own weir process; not applicable to an external broker")
	}
	data := filepath.Join(t.TempDir(), "data")
	w, err := runWeir("127.0.0.1:0", data)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.kill() }()
	addr := w.addr
	ctx := testCtx(t)
	a, err := NewAdmin(map[string]string{"bootstrap.servers": addr})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const topic = "restart"
	if err := a.CreateTopics(ctx, TopicSpec{Name: topic, Partitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	p, err := NewProducer(map[string]string{
		"bootstrap.servers": addr, "linger.ms": "2", "retry.backoff.ms": "50", "reconnect.backoff.ms": "50",
		"request.timeout.ms": "5000", "delivery.timeout.ms": "30000",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	var mu sync.Mutex
	offsets := map[int32][]int64{}
	var failures []error
	const n = 4000
	send := func(i int) *Future {
		return p.Send(ctx, &Record{Topic: topic, Key: fmt.Appendf(nil, "%d", i%10), Value: fmt.Appendf(nil, "%d", i)}, func(md RecordMetadata, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, err)
				return
			}
			offsets[md.Partition] = append(offsets[md.Partition], md.Offset)
		})
	}
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(offsets[0]) + len(offsets[1])
	}
	// A consumer reads along through the restart.
	cons, err := NewConsumer(map[string]string{"bootstrap.servers": addr, "auto.offset.reset": "earliest", "reconnect.backoff.ms": "50"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close(ctx)
	if err := cons.Assign([]TopicPartition{{topic, 0}, {topic, 1}}); err != nil {
		t.Fatal(err)
	}
	seenLive := map[string]int{}
	consumed := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(40 * time.Second)
		for len(seenLive) < n {
			if time.Now().After(deadline) {
				consumed <- fmt.Errorf("consumer read %d distinct values of %d", len(seenLive), n)
				return
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			recs, err := cons.Poll(pctx)
			cancel()
			if err != nil {
				consumed <- err
				return
			}
			for _, r := range recs {
				seenLive[string(r.Value)]++
			}
		}
		consumed <- nil
	}()
	// Keep requests in flight: wait for every 50th record before going on,
	// from a goroutine, while the test kills and restarts the broker.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			f := send(i)
			if i%50 == 49 {
				_, _ = f.Get(ctx)
			}
		}
	}()
	eventually(t, 20*time.Second, func() error {
		if a := acked(); a < n/4 {
			return fmt.Errorf("%d acknowledged", a)
		}
		return nil
	})
	w.kill()
	if w, err = runWeir(addr, data); err != nil {
		t.Fatal(err)
	}
	<-done
	fctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	if err := p.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		t.Fatalf("%d records failed, first: %v", len(failures), failures[0])
	}
	total := 0
	for part, offs := range offsets {
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for i := 1; i < len(offs); i++ {
			if offs[i] == offs[i-1] {
				t.Fatalf("partition %d: offset %d acknowledged twice", part, offs[i])
			}
		}
		total += len(offs)
	}
	if total != n {
		t.Fatalf("%d acknowledged, want %d", total, n)
	}
	m := p.Metrics()
	t.Logf("retries %d, batches %d", m.RecordRetries, m.BatchesSent)
	if err := <-consumed; err != nil {
		t.Fatalf("live consumer: %v", err)
	}
	for v, k := range seenLive {
		if k != 1 {
			t.Fatalf("live consumer read %s %d times", v, k)
		}
	}
	// The log holds every value once: retries across the restart wrote
	// nothing twice.
	c, err := NewConsumer(map[string]string{"bootstrap.servers": addr, "auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.Assign([]TopicPartition{{topic, 0}, {topic, 1}}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	eventually(t, 20*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		recs, err := c.Poll(pctx)
		cancel()
		if err != nil {
			return err
		}
		for _, r := range recs {
			seen[string(r.Value)]++
		}
		if len(seen) < n {
			return fmt.Errorf("read %d distinct values of %d", len(seen), n)
		}
		return nil
	})
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("value %s written %d times", v, k)
		}
	}
}
