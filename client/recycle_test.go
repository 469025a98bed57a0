package client

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
)

// TestBatchBuffersRecycled: the buffers of answered batches are reused for
// new batches, but never while a request may still hold them. Every batch
// sent stays byte for byte what it was until its answer arrives (a reused
// buffer would overwrite it), decodes with a valid CRC and carries the
// values given to Send; and finished batches are not left reachable (a
// queue that drops its head by reslicing keeps them in its backing array).
func TestBatchBuffersRecycled(t *testing.T) {
	p, sim, step := simProducer(t, map[string]string{"linger.ms": "0", "batch.size": "1024", "buffer.memory": "65536", "max.block.ms": "200"})
	type sent struct {
		wire, copy []byte
		first      *Future // the first record's: done once the batch is answered
	}
	var inFlight []sent
	futs := map[string]*Future{}
	seen := map[string]int{}
	calls := 0
	sim.hook = func(_ *simBroker, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) {
		for ti, tp := range req.Topics {
			for pi, part := range tp.Partitions {
				var values []string
				err := records.Decode(part.Records, 1<<20, func(b *records.Batch) {
					for _, r := range b.Records {
						values = append(values, string(r.Value))
					}
				})
				if err != nil || len(values) == 0 {
					t.Fatalf("batch sent corrupt (%d values): %v", len(values), err)
				}
				inFlight = append(inFlight, sent{part.Records, bytes.Clone(part.Records), futs[values[0]]})
				calls++
				if calls%5 == 2 {
					resp.Topics[ti].Partitions[pi].ErrorCode = 7 // REQUEST_TIMED_OUT: retried
					continue
				}
				for _, v := range values {
					seen[v]++
				}
			}
		}
	}
	// Weak pointers to every batch queued at some point.
	var batches []weak.Pointer[batch]
	known := map[weak.Pointer[batch]]bool{}
	watch := func() {
		for _, q := range p.topic("t").all() {
			if q == nil {
				continue
			}
			q.mu.Lock()
			for _, b := range q.batches {
				if w := weak.Make(b); !known[w] {
					known[w] = true
					batches = append(batches, w)
				}
			}
			q.mu.Unlock()
		}
	}
	checkUnanswered := func() {
		kept := inFlight[:0]
		for _, s := range inFlight {
			select {
			case <-s.first.Done():
				continue
			default:
			}
			if !bytes.Equal(s.wire, s.copy) {
				t.Fatal("a batch's bytes changed before its answer arrived")
			}
			kept = append(kept, s)
		}
		inFlight = kept
	}
	ctx := context.Background()
	const n = 2000
	for i := range n {
		v := fmt.Sprintf("value-%05d-%s", i, bytes.Repeat([]byte{'x'}, i%40))
		futs[v] = p.Send(ctx, &Record{Topic: "t", Value: []byte(v)}, nil)
		watch()
		step()
		checkUnanswered()
	}
	for range 3000 {
		step()
		checkUnanswered()
	}
	for v, f := range futs {
		if _, err := f.Get(ctx); err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if seen[v] != 1 {
			t.Fatalf("%s written %d times", v, seen[v])
		}
	}
	if p.mem.reused == 0 {
		t.Fatal("no batch buffer was reused")
	}
	if p.Metrics().RecordRetries == 0 {
		t.Fatal("no retry happened")
	}
	// Every batch is finished: none may still be reachable (the
	// producer itself stays alive).
	runtime.GC()
	live := 0
	for _, w := range batches {
		if w.Value() != nil {
			live++
		}
	}
	if live > 0 {
		t.Fatalf("%d of %d finished batches are still reachable", live, len(batches))
	}
	runtime.KeepAlive(p)
}

// TestBufferPoolKeepsBatchSizedBuffers: only buffers of batch.size (up to
// twice that) are kept, at most buffer.memory / batch.size of them.
func TestBufferPoolKeepsBatchSizedBuffers(t *testing.T) {
	b := newBufferPool(4096, 1024)
	b.keepBuffer(make([]byte, 10, 512))  // too small
	b.keepBuffer(make([]byte, 0, 4096))  // too large
	b.keepBuffer(make([]byte, 30, 1024)) // kept, emptied
	if got := b.takeBuffer(); cap(got) != 1024 || len(got) != 0 {
		t.Fatalf("took a buffer of len %d cap %d", len(got), cap(got))
	}
	if b.takeBuffer() != nil {
		t.Fatal("a second buffer came from nowhere")
	}
	for range 10 {
		b.keepBuffer(make([]byte, 0, 1500))
	}
	if len(b.kept) != 4 {
		t.Fatalf("kept %d buffers, want 4 (4096 / 1024)", len(b.kept))
	}
}

// TestFutureDoneAfterResult: a Future asked for Done after its result
// arrived is already done, one asked before is woken, and the pending
// record lets go of the Record once the result is in.
func TestFutureDoneAfterResult(t *testing.T) {
	early := &pendingRecord{rec: &Record{Topic: "t"}}
	waiting := early.fut.Done()
	late := &pendingRecord{rec: &Record{Topic: "t"}}
	md := RecordMetadata{Topic: "t", Offset: 42}
	for _, pr := range []*pendingRecord{early, late} {
		pr.complete(md, nil)
		if pr.rec != nil {
			t.Fatal("a completed record still holds its Record")
		}
	}
	select {
	case <-waiting:
	default:
		t.Fatal("Done taken before the result was not closed by it")
	}
	select {
	case <-late.fut.Done():
	default:
		t.Fatal("Done taken after the result is not closed")
	}
	if got, err := late.fut.Get(context.Background()); err != nil || got.Offset != 42 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}
