package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"weir/client"
)

// CopyConfig describes an end-to-end exactly-once copy test: a
// read_committed group consumer reads From, a transactional producer
// writes each record to To, and every TransactionDuration the producer
// commits the records and the consumer's offsets in one transaction.
type CopyConfig struct {
	From, To            string
	Group               string
	TransactionalID     string
	TransactionDuration time.Duration // 100 ms when zero
	NumRecords          int64
	// Props are the client properties both clients share
	// (bootstrap.servers); ProducerProps and ConsumerProps add to them.
	Props, ProducerProps, ConsumerProps map[string]string
	// Timeout stops the test when no record arrives for this long.
	Timeout time.Duration
	Now     func() time.Time
}

// CopyResult is a copy test's outcome.
type CopyResult struct {
	Records      int64
	Elapsed      time.Duration
	Transactions int64
	// Commit latencies: SendOffsetsToTransaction and CommitTransaction.
	CommitAvg, CommitP50, CommitP99, CommitMax time.Duration
}

// RecordsPerSec is the copy rate.
func (r CopyResult) RecordsPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }

// WriteSummary prints the result.
func (r CopyResult) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "%d records copied in %.2f s, %.1f records/sec; %d transactions, commit latency %.2f ms avg, %.2f ms 50th, %.2f ms 99th, %.2f ms max.\n",
		r.Records, r.Elapsed.Seconds(), r.RecordsPerSec(), r.Transactions, ms(r.CommitAvg), ms(r.CommitP50), ms(r.CommitP99), ms(r.CommitMax))
}

func merged(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Copy runs the copy test until NumRecords records are copied and
// committed. The clock starts at the first record read.
func Copy(ctx context.Context, cfg CopyConfig) (CopyResult, error) {
	if cfg.From == "" || cfg.To == "" || cfg.Group == "" || cfg.TransactionalID == "" || cfg.NumRecords <= 0 {
		return CopyResult{}, errors.New("perf: copy needs from, to, a group, a transactional id and a positive record count")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if cfg.TransactionDuration <= 0 {
		cfg.TransactionDuration = 100 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	cprops := merged(merged(cfg.Props, map[string]string{"group.id": cfg.Group, "isolation.level": "read_committed",
		"enable.auto.commit": "false", "auto.offset.reset": "earliest"}), cfg.ConsumerProps)
	c, err := client.NewConsumer(cprops)
	if err != nil {
		return CopyResult{}, err
	}
	defer c.Close(context.Background())
	pprops := merged(merged(cfg.Props, map[string]string{"transactional.id": cfg.TransactionalID}), cfg.ProducerProps)
	p, err := client.NewProducer(pprops)
	if err != nil {
		return CopyResult{}, err
	}
	defer p.Close(context.Background())
	if err := c.Subscribe([]string{cfg.From}, nil); err != nil {
		return CopyResult{}, err
	}
	if err := p.InitTransactions(ctx); err != nil {
		return CopyResult{}, err
	}
	var (
		res      CopyResult
		commits  []time.Duration
		start    time.Time
		open     bool
		opened   time.Time
		inTxn    int64
		next     = map[client.TopicPartition]int64{}
		lastRead = now()
	)
	commit := func() error {
		from := now()
		if err := p.SendOffsetsToTransaction(ctx, next, c.GroupMetadata()); err != nil {
			return err
		}
		if err := p.CommitTransaction(ctx); err != nil {
			return err
		}
		commits = append(commits, now().Sub(from))
		res.Records += inTxn
		inTxn, open = 0, false
		return nil
	}
	for res.Records < cfg.NumRecords {
		pctx, cancel := context.WithTimeout(ctx, cfg.TransactionDuration)
		recs, err := c.Poll(pctx)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return res, err
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if len(recs) > 0 {
			lastRead = now()
			if start.IsZero() {
				start = lastRead
			}
			if !open {
				if err := p.BeginTransaction(); err != nil {
					return res, err
				}
				open, opened = true, now()
			}
			for _, r := range recs {
				p.Send(ctx, &client.Record{Topic: cfg.To, Key: r.Key, Value: r.Value, Headers: r.Headers}, nil)
				next[client.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
			}
			inTxn += int64(len(recs))
		} else if now().Sub(lastRead) > cfg.Timeout {
			return res, fmt.Errorf("perf: copy: no record for %v after %d of %d", cfg.Timeout, res.Records+inTxn, cfg.NumRecords)
		}
		if open && (now().Sub(opened) >= cfg.TransactionDuration || res.Records+inTxn >= cfg.NumRecords) {
			if err := commit(); err != nil {
				return res, err
			}
		}
	}
	res.Elapsed = now().Sub(start)
	if n := len(commits); n > 0 {
		res.Transactions = int64(n)
		var sum time.Duration
		for _, d := range commits {
			sum += d
		}
		sort.Slice(commits, func(i, j int) bool { return commits[i] < commits[j] })
		res.CommitAvg, res.CommitMax = sum/time.Duration(n), commits[n-1]
		res.CommitP50, res.CommitP99 = commits[(n-1)/2], commits[int(0.99*float64(n-1))]
	}
	return res, nil
}
