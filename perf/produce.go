package perf

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"weir/client"
)

// ProduceConfig describes a producer test.
type ProduceConfig struct {
	Topic      string
	NumRecords int64
	RecordSize int
	// Throughput is the target records per second; <= 0 is unthrottled.
	Throughput float64
	Props      map[string]string
	// ReportEvery is the interval of progress lines (Kafka prints every
	// 5 s).
	ReportEvery time.Duration
	// KeySpace, when positive, gives record i the key k%012d of i mod
	// KeySpace, so that each key is updated in turn (compaction
	// benchmarks); otherwise records have no key, as Kafka's tool sends.
	KeySpace int64
	// LatencyLog, when set, receives one line per sampled result after the
	// run: its send time (Unix milliseconds) and its latency
	// (microseconds), so that a percentile can be taken over any window.
	LatencyLog io.Writer
	// TransactionalID, when set, makes the producer transactional, as
	// ProducerPerformance's --transactional-id does: records are sent in
	// transactions committed every TransactionDuration (3 s when zero).
	TransactionalID     string
	TransactionDuration time.Duration
	Now                 func() time.Time
}

// ProduceResult is a producer test's outcome.
type ProduceResult struct {
	Records, Errors int64
	Bytes           int64
	Elapsed         time.Duration
	AvgLatency      time.Duration
	MaxLatency      time.Duration
	P50, P95, P99   time.Duration
	P999            time.Duration
	FirstError      error
	Metrics         client.ProducerMetrics
	// Transactions and the commit latencies (CommitTransaction, which
	// sends what is queued and ends the transaction), with
	// TransactionalID.
	Transactions                    int64
	CommitAvg, CommitP50, CommitP99 time.Duration
	CommitMax                       time.Duration
}

// RecordsPerSec and MBPerSec are the summary rates.
func (r ProduceResult) RecordsPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }
func (r ProduceResult) MBPerSec() float64 {
	return float64(r.Bytes) / (1024 * 1024) / r.Elapsed.Seconds()
}

// window accumulates one progress interval.
type window struct {
	start          time.Time
	count, bytes   int64
	latSum, latMax time.Duration
}

// maxLatencySamples bounds the latencies kept for the percentiles: every
// n-th result is kept, n = records / maxLatencySamples rounded down (at
// least 1), as Kafka's tool samples.
const maxLatencySamples = 500_000

// produceStats is the state the send callbacks update, so that each
// callback captures one pointer and its send time.
type produceStats struct {
	cfg       *ProduceConfig
	now       func() time.Time
	out       io.Writer
	mu        sync.Mutex
	res       ProduceResult
	win       window
	results   int64 // callbacks so far, for sampling
	sampling  int64
	latencies []int32 // microseconds
	sentAt    []int64 // Unix ms of each sampled latency, with LatencyLog
}

func (st *produceStats) report(t time.Time) {
	win := &st.win
	el := t.Sub(win.start).Seconds()
	if win.count > 0 && el > 0 {
		fmt.Fprintf(st.out, "%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.\n",
			win.count, float64(win.count)/el, float64(win.bytes)/(1024*1024)/el,
			ms(win.latSum)/float64(win.count), ms(win.latMax))
	}
	*win = window{start: t}
}

// done records one result; from is when its latency starts.
func (st *produceStats) done(from time.Time, err error) {
	t := st.now()
	lat := t.Sub(from)
	st.mu.Lock()
	defer st.mu.Unlock()
	res := &st.res
	if err != nil {
		res.Errors++
		if res.FirstError == nil {
			res.FirstError = err
		}
		return
	}
	size := int64(st.cfg.RecordSize)
	res.Records++
	res.Bytes += size
	res.AvgLatency += lat
	res.MaxLatency = max(res.MaxLatency, lat)
	if st.results%st.sampling == 0 && len(st.latencies) < cap(st.latencies) {
		st.latencies = append(st.latencies, int32(min(lat.Microseconds(), 1<<31-1)))
		if st.cfg.LatencyLog != nil {
			st.sentAt = append(st.sentAt, from.UnixMilli())
		}
	}
	st.results++
	win := &st.win
	win.count++
	win.bytes += size
	win.latSum += lat
	win.latMax = max(win.latMax, lat)
	if t.Sub(win.start) >= st.cfg.ReportEvery {
		st.report(t)
	}
}

// Produce runs the test and writes Kafka-style progress lines to out.
func Produce(ctx context.Context, cfg ProduceConfig, out io.Writer) (ProduceResult, error) {
	if cfg.NumRecords <= 0 || cfg.RecordSize <= 0 || cfg.Topic == "" {
		return ProduceResult{}, fmt.Errorf("perf: topic, a positive record count and a positive record size are required")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if cfg.ReportEvery <= 0 {
		cfg.ReportEvery = 5 * time.Second
	}
	props := cfg.Props
	if cfg.TransactionalID != "" {
		props = make(map[string]string, len(cfg.Props)+1)
		for k, v := range cfg.Props {
			props[k] = v
		}
		props["transactional.id"] = cfg.TransactionalID
		if cfg.TransactionDuration <= 0 {
			cfg.TransactionDuration = 3 * time.Second
		}
	}
	p, err := client.NewProducer(props)
	if err != nil {
		return ProduceResult{}, err
	}
	closed := false
	defer func() {
		if !closed { // an early return: stop the producer without waiting
			cctx, cancel := context.WithCancel(context.Background())
			cancel()
			p.Close(cctx)
		}
	}()
	payload := make([]byte, cfg.RecordSize)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range payload {
		payload[i] = byte('A' + rng.IntN(26))
	}

	sampling := max(cfg.NumRecords/maxLatencySamples, 1)
	st := &produceStats{cfg: &cfg, now: now, out: out, win: window{start: now()}, sampling: sampling,
		latencies: make([]int32, 0, cfg.NumRecords/sampling+1)}
	// Every send shares one Record (the client only reads it), unless
	// records have keys.
	rec := &client.Record{Topic: cfg.Topic, Value: payload}
	txn := &txnTimer{p: p, now: now, every: cfg.TransactionDuration}
	if cfg.TransactionalID != "" {
		if err := p.InitTransactions(ctx); err != nil {
			return ProduceResult{}, err
		}
		if err := txn.begin(); err != nil {
			return ProduceResult{}, err
		}
	}
	start := now()
	for i := int64(0); i < cfg.NumRecords; i++ {
		if cfg.TransactionalID != "" && now().Sub(txn.started) >= txn.every {
			if err := txn.commit(ctx); err != nil {
				return st.result(), err
			}
			if err := txn.begin(); err != nil {
				return st.result(), err
			}
		}
		intended := start
		if cfg.Throughput > 0 {
			intended = start.Add(time.Duration(float64(i) / cfg.Throughput * float64(time.Second)))
			if d := intended.Sub(now()); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return st.result(), ctx.Err()
				}
			}
		}
		from := now()
		if cfg.Throughput > 0 {
			from = intended
		}
		r := rec
		if cfg.KeySpace > 0 {
			r = &client.Record{Topic: cfg.Topic, Key: fmt.Appendf(nil, "k%012d", i%cfg.KeySpace), Value: payload}
		}
		p.Send(ctx, r, func(_ client.RecordMetadata, err error) { st.done(from, err) })
	}
	if cfg.TransactionalID != "" {
		if err := txn.commit(ctx); err != nil {
			return st.result(), err
		}
	} else if err := p.Flush(ctx); err != nil {
		return st.result(), err
	}
	end := now()
	metrics := p.Metrics()
	closed = true
	if err := p.Close(ctx); err != nil {
		return st.result(), err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	res := st.res
	res.Metrics = metrics
	latencies := st.latencies
	if cfg.LatencyLog != nil {
		w := bufio.NewWriter(cfg.LatencyLog)
		for i, at := range st.sentAt {
			fmt.Fprintf(w, "%d %d\n", at, latencies[i])
		}
		if err := w.Flush(); err != nil {
			return res, err
		}
	}
	res.Elapsed = end.Sub(start)
	if res.Records > 0 {
		res.AvgLatency /= time.Duration(res.Records)
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(q float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return time.Duration(latencies[int(q*float64(len(latencies)-1))]) * time.Microsecond
	}
	res.P50, res.P95, res.P99, res.P999 = pct(0.5), pct(0.95), pct(0.99), pct(0.999)
	if n := len(txn.commits); n > 0 {
		res.Transactions = int64(n)
		var sum time.Duration
		for _, d := range txn.commits {
			sum += d
		}
		sort.Slice(txn.commits, func(i, j int) bool { return txn.commits[i] < txn.commits[j] })
		res.CommitAvg, res.CommitMax = sum/time.Duration(n), txn.commits[n-1]
		res.CommitP50, res.CommitP99 = txn.commits[(n-1)/2], txn.commits[int(0.99*float64(n-1))]
	}
	return res, nil
}

// txnTimer runs a transactional test's transactions: one begins, and is
// committed once it has been open for every, timing each commit.
type txnTimer struct {
	p       *client.Producer
	now     func() time.Time
	every   time.Duration
	started time.Time
	commits []time.Duration
}

func (t *txnTimer) begin() error {
	t.started = t.now()
	return t.p.BeginTransaction()
}

func (t *txnTimer) commit(ctx context.Context) error {
	from := t.now()
	if err := t.p.CommitTransaction(ctx); err != nil {
		return err
	}
	t.commits = append(t.commits, t.now().Sub(from))
	return nil
}

// result is a copy of the result so far.
func (st *produceStats) result() ProduceResult {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.res
}

// WriteSummary prints the final line in ProducerPerformance's format.
func (r ProduceResult) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.\n",
		r.Records, r.RecordsPerSec(), r.MBPerSec(), ms(r.AvgLatency), ms(r.MaxLatency),
		r.P50.Milliseconds(), r.P95.Milliseconds(), r.P99.Milliseconds(), r.P999.Milliseconds())
	if r.Transactions > 0 {
		fmt.Fprintf(w, "%d transactions committed, commit latency %.2f ms avg, %.2f ms 50th, %.2f ms 99th, %.2f ms max.\n",
			r.Transactions, ms(r.CommitAvg), ms(r.CommitP50), ms(r.CommitP99), ms(r.CommitMax))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
