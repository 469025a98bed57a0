package compattest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Pos is where the broker put a record.
type Pos struct {
	Partition int32
	Offset    int64
}

// Produce sends Record(topic, i) for i in [from, to) through cl, waits for
// every acknowledgement, fails the test on any produce error and returns the
// position of each record by index.
func Produce(t testing.TB, cl *kgo.Client, topic string, from, to int) map[int]Pos {
	t.Helper()
	ctx := Ctx(t, 2*time.Minute)
	var (
		mu    sync.Mutex
		pos   = make(map[int]Pos, to-from)
		first error
	)
	for i := from; i < to; i++ {
		cl.Produce(ctx, Record(topic, i), func(r *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("produce %s: %w", r.Key, err)
				}
				return
			}
			pos[i] = Pos{r.Partition, r.Offset}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		t.Fatal(first)
	}
	if len(pos) != to-from {
		t.Fatalf("%d of %d records acknowledged", len(pos), to-from)
	}
	return pos
}

// ReadAll reads topic from the start with a group-less consumer until it has n
// records, failing the test if it cannot within timeout. It returns the
// records in fetch order.
func ReadAll(t testing.TB, topic string, n int, timeout time.Duration, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := Client(t, append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out := make([]*kgo.Record, 0, n)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s before the %v deadline", len(out), n, topic, timeout)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// VerifyExactlyOnce checks that recs are exactly Record(topic, i) for every i
// in [from, to), each once, at the position the producer was told (when want
// is not nil), and in offset order within each partition.
func VerifyExactlyOnce(recs []*kgo.Record, from, to int, want map[int]Pos) error {
	seen := make(map[int]bool, to-from)
	last := make(map[int32]int64)
	for _, r := range recs {
		i, err := Check(r)
		if err != nil {
			return err
		}
		if i < from || i >= to {
			return fmt.Errorf("record index %d outside [%d,%d)", i, from, to)
		}
		if seen[i] {
			return fmt.Errorf("record %d delivered twice (second at %d@%d)", i, r.Partition, r.Offset)
		}
		seen[i] = true
		if want != nil && want[i] != (Pos{r.Partition, r.Offset}) {
			return fmt.Errorf("record %d fetched at %d@%d, produced to %d@%d", i, r.Partition, r.Offset, want[i].Partition, want[i].Offset)
		}
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			return fmt.Errorf("partition %d: offset %d fetched after %d", r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
	}
	if len(recs) != to-from {
		return fmt.Errorf("got %d records, want %d", len(recs), to-from)
	}
	return nil
}
