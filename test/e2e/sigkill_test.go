package e2e

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSIGKILLLosesNothingAcknowledged produces with acks=all from an
// idempotent franz-go producer while weir is SIGKILLed and restarted over
// and over, then reads everything back: every acknowledged record must be
// there exactly once, in the order produced.
func TestSIGKILLLosesNothingAcknowledged(t *testing.T) {
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	dir := t.TempDir()
	addr := freePort(t)
	p := startWeir(t, dir, addr)
	ctx := testContext(t, 3*time.Minute)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("crash"), kgo.AllowAutoTopicCreation(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(2*time.Minute), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	var mu sync.Mutex
	acked := map[int]bool{}
	var failed []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // bounded by stop and by the test context
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			default:
			}
			n := i
			cl.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(n))}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed = append(failed, err)
					return
				}
				acked[n] = true
			})
			if i%50 == 49 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()

	rng := rand.New(rand.NewPCG(7, 11))
	for range rounds {
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		p.kill()
		p = startWeir(t, dir, addr)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	nAcked := len(acked)
	mu.Unlock()
	if nAcked == 0 {
		t.Fatal("nothing was acknowledged")
	}

	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("crash"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[int]int{}
	last := -1
	deadline := time.Now().Add(60 * time.Second)
	for countAcked(seen, acked) < nAcked && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := c.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			n, _ := strconv.Atoi(string(r.Value))
			seen[n]++
			if acked[n] && n < last {
				t.Errorf("acknowledged record %d read after %d: out of order", n, last)
			}
			if acked[n] {
				last = n
			}
		})
	}
	for n := range acked {
		switch seen[n] {
		case 1:
		case 0:
			t.Errorf("acknowledged record %d is missing", n)
		default:
			t.Errorf("acknowledged record %d read %d times", n, seen[n])
		}
	}
	// Idempotence covers unacknowledged retries too: nothing is written twice.
	for n, k := range seen {
		if k > 1 && !acked[n] {
			t.Errorf("unacknowledged record %d written %d times", n, k)
		}
	}
	t.Logf("%d kills, %d records acknowledged, %d failed deliveries, %d distinct records read", rounds, nAcked, len(failed), len(seen))
	p.stop(t)
}

func countAcked(seen map[int]int, acked map[int]bool) int {
	n := 0
	for k := range seen {
		if acked[k] {
			n++
		}
	}
	return n
}
