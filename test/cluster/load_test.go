package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// load produces to one topic from a franz-go client with acks=all,
// record i going to partition i % partitions with value i, and consumes
// the topic in a group from a second client, until stop. Production is
// paced and bounded by maxRecords.
type load struct {
	t          *testing.T
	partitions int
	prod, cons *kgo.Client
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	mu          sync.Mutex
	next        int   // index of the next record to produce
	ackedMax    []int // per partition, the highest index acknowledged
	consumedMax []int // per partition, the highest index consumed
	acked       int
	consumed    int
	ackedSet    map[int]bool
	consumedSet map[int]bool
	failed      int
	firstFailed []string
	fetchErrs   []string
}

const (
	maxRecords    = 200_000
	produceEvery  = 2 * time.Millisecond
	keepFirstErrs = 10
)

func startLoad(t *testing.T, ctx context.Context, c *testCluster, topic string, partitions int, group string) *load {
	t.Helper()
	seeds := c.bootstrap(c.live())
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.MetadataMinAge(200*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.MetadataMinAge(200*time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
	if err != nil {
		prod.Close()
		t.Fatal(err)
	}
	lctx, cancel := context.WithCancel(ctx)
	l := &load{t: t, partitions: partitions, prod: prod, cons: cons, cancel: cancel,
		ackedMax: filled(partitions, -1), consumedMax: filled(partitions, -1),
		ackedSet: map[int]bool{}, consumedSet: map[int]bool{}}
	l.wg.Add(2)
	go l.produce(lctx)
	go l.consume(lctx)
	t.Cleanup(l.close)
	return l
}

func filled(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func (l *load) produce(ctx context.Context) {
	defer l.wg.Done()
	tick := time.NewTicker(produceEvery)
	defer tick.Stop()
	for i := range maxRecords {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		l.mu.Lock()
		l.next = i + 1
		l.mu.Unlock()
		p := i % l.partitions
		l.prod.Produce(ctx, &kgo.Record{Partition: int32(p), Value: []byte(strconv.Itoa(i))}, func(_ *kgo.Record, err error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if err != nil {
				if errors.Is(err, context.Canceled) && ctx.Err() != nil {
					return // the load stopped; not a failure of the cluster
				}
				l.failed++
				if len(l.firstFailed) < keepFirstErrs {
					l.firstFailed = append(l.firstFailed, fmt.Sprintf("%s record %d to partition %d: %v",
						time.Now().Format("15:04:05.000"), i, p, err))
				}
				return
			}
			l.acked++
			l.ackedSet[i] = true
			l.ackedMax[p] = max(l.ackedMax[p], i)
		})
	}
}

func (l *load) consume(ctx context.Context) {
	defer l.wg.Done()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := l.cons.PollFetches(pctx)
		cancel()
		l.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			if len(l.fetchErrs) < keepFirstErrs {
				l.fetchErrs = append(l.fetchErrs, fmt.Sprintf("%s %s/%d: %v", time.Now().Format("15:04:05.000"), topic, p, err))
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			i, err := strconv.Atoi(string(r.Value))
			if err != nil || int(r.Partition) >= l.partitions || i%l.partitions != int(r.Partition) {
				l.t.Errorf("consumed %q from partition %d: not a record this load produced", r.Value, r.Partition)
				return
			}
			l.consumed++
			l.consumedSet[i] = true
			l.consumedMax[r.Partition] = max(l.consumedMax[r.Partition], i)
		})
		l.mu.Unlock()
	}
}

// mark is the index of the next record to be produced: every record from
// it on is produced after the call.
func (l *load) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// flowingSince returns a check that passes once, on every partition, a
// record produced at or after mark has been acknowledged and consumed.
func (l *load) flowingSince(mark int) func(context.Context) error {
	return func(context.Context) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		var notAcked, notConsumed []int
		for p := range l.partitions {
			if l.ackedMax[p] < mark {
				notAcked = append(notAcked, p)
			}
			if l.consumedMax[p] < mark {
				notConsumed = append(notConsumed, p)
			}
		}
		if len(notAcked)+len(notConsumed) > 0 {
			return fmt.Errorf("since record %d (next %d): partitions %v have no acknowledged record, %v no consumed one"+
				" (%d acked, %d consumed, %d failed in all; first failures %q; first fetch errors %q)",
				mark, l.next, notAcked, notConsumed, l.acked, l.consumed, l.failed, l.firstFailed, l.fetchErrs)
		}
		return nil
	}
}

// stop ends production, waits for every produced record's outcome
// (bounded) and logs the totals; it returns the failed count with the
// first failures.
func (l *load) stop(ctx context.Context) (int, []string) {
	l.cancel()
	l.wg.Wait()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := l.prod.Flush(fctx); err != nil {
		l.t.Errorf("flushing the producer: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("load: %d produced, %d acknowledged, %d failed, %d consumed; first fetch errors %q",
		l.next, l.acked, l.failed, l.consumed, l.fetchErrs)
	return l.failed, l.firstFailed
}

// unconsumedBefore counts the acknowledged records produced before mark
// that the consumer never received, with a few of them. Once
// flowingSince(mark) has passed, the consumer has read past them on their
// partition: they are gone from the log it read (or it skipped them on an
// offset reset).
func (l *load) unconsumedBefore(mark int) (int, []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, some := 0, []int(nil)
	for i := range l.ackedSet {
		if i < mark && !l.consumedSet[i] {
			n++
			if len(some) < keepFirstErrs {
				some = append(some, i)
			}
		}
	}
	slices.Sort(some)
	return n, some
}

func (l *load) close() {
	l.cancel()
	l.wg.Wait()
	l.prod.Close()
	l.cons.Close()
}
