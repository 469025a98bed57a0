package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"weir/client"
)

// ConsumeConfig describes a consumer test.
type ConsumeConfig struct {
	Topic string
	// NumRecords is how many records to read before stopping.
	NumRecords int64
	// Group, when set, consumes as a group member; otherwise every
	// partition is assigned directly.
	Group string
	Props map[string]string
	// Timeout ends the test when no record arrives for this long.
	Timeout time.Duration
	Now     func() time.Time
}

// ConsumeResult is a consumer test's outcome.
type ConsumeResult struct {
	Records, Bytes int64
	Start, End     time.Time
	// FirstRecord is when the first record arrived: the time before it is
	// joining the group and finding offsets (Kafka's rebalance time).
	FirstRecord time.Time
	// FetchWait is the time Poll spent waiting with nothing to return.
	FetchWait time.Duration
}

// Consume reads NumRecords records (or until Timeout passes without one).
func Consume(ctx context.Context, cfg ConsumeConfig) (ConsumeResult, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	props := map[string]string{"auto.offset.reset": "earliest"}
	for k, v := range cfg.Props {
		props[k] = v
	}
	if cfg.Group != "" {
		props["group.id"] = cfg.Group
	}
	c, err := client.NewConsumer(props)
	if err != nil {
		return ConsumeResult{}, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	res := ConsumeResult{Start: now()}
	if cfg.Group != "" {
		if err := c.Subscribe([]string{cfg.Topic}, nil); err != nil {
			return res, err
		}
	} else if err := assignAll(ctx, c, cfg); err != nil {
		return res, err
	}
	last := now()
	for res.Records < cfg.NumRecords {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		before := now()
		recs, err := c.Poll(pctx)
		cancel()
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return res, err
		}
		t := now()
		if len(recs) == 0 {
			res.FetchWait += t.Sub(before)
			if t.Sub(last) >= cfg.Timeout {
				break
			}
			continue
		}
		if res.FirstRecord.IsZero() {
			res.FirstRecord = t
		}
		last = t
		for _, r := range recs {
			res.Records++
			res.Bytes += int64(len(r.Value) + len(r.Key))
		}
	}
	res.End = now()
	return res, nil
}

func assignAll(ctx context.Context, c *client.Consumer, cfg ConsumeConfig) error {
	adm, err := client.NewAdmin(map[string]string{"bootstrap.servers": cfg.Props["bootstrap.servers"]})
	if err != nil {
		return err
	}
	defer adm.Close()
	descs, err := adm.DescribeTopics(ctx, cfg.Topic)
	if err != nil {
		return err
	}
	if len(descs) != 1 || descs[0].Err != nil {
		return fmt.Errorf("perf: topic %s: %v", cfg.Topic, descs[0].Err)
	}
	var tps []client.TopicPartition
	for _, p := range descs[0].Partitions {
		tps = append(tps, client.TopicPartition{Topic: cfg.Topic, Partition: p.Partition})
	}
	if err := c.Assign(tps); err != nil {
		return err
	}
	return c.SeekToBeginning(ctx, tps...)
}

// WriteSummary prints ConsumerPerformance's header and data line.
func (r ConsumeResult) WriteSummary(w io.Writer) {
	el := r.End.Sub(r.Start).Seconds()
	mb := float64(r.Bytes) / (1024 * 1024)
	first := r.FirstRecord
	if first.IsZero() {
		first = r.End
	}
	fetchEl := r.End.Sub(first).Seconds()
	fmt.Fprintln(w, "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec, fetch.wait.ms")
	fmt.Fprintf(w, "%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f, %d\n",
		kafkaTime(r.Start), kafkaTime(r.End),
		mb, mb/el, r.Records, float64(r.Records)/el,
		first.Sub(r.Start).Milliseconds(), r.End.Sub(first).Milliseconds(),
		safeDiv(mb, fetchEl), safeDiv(float64(r.Records), fetchEl), r.FetchWait.Milliseconds())
}

func safeDiv(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// kafkaTime formats t as ConsumerPerformance does: yyyy-MM-dd HH:mm:ss:SSS.
func kafkaTime(t time.Time) string {
	return fmt.Sprintf("%s:%03d", t.Format("2006-01-02 15:04:05"), t.Nanosecond()/int(time.Millisecond))
}
