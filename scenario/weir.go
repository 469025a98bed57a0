package scenario

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"weir/client"
)

// drainWeir drains the backlog with client.ShareConsumer in this process,
// implicit acknowledgement. A ticker goroutine, owned here and stopped
// before returning, samples the delivery counter once per sampling
// interval.
func drainWeir(ctx context.Context, spec drainSpec) (drainOutcome, error) {
	cfg := spec.cfg
	s, err := client.NewShareConsumer(map[string]string{
		"bootstrap.servers":          cfg.Bootstrap,
		"group.id":                   cfg.Group,
		"share.acquire.mode":         cfg.AcquireMode,
		"share.acknowledgement.mode": "implicit",
		"max.poll.records":           strconv.Itoa(cfg.MaxPollRecords),
		"fetch.max.wait.ms":          strconv.FormatInt(cfg.FetchMaxWait.Milliseconds(), 10),
	}, client.WithLogger(cfg.Logger))
	if err != nil {
		return drainOutcome{}, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(cctx); err != nil {
			cfg.Logger.Warn("closing the share consumer", "err", err)
		}
	}()

	dctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var consumed atomic.Int64
	smp := startSampler(&consumed, cfg.SampleInterval)
	led := newLedger(cfg.Partitions)
	if err := s.Subscribe([]string{cfg.Topic}); err != nil {
		smp.stop()
		return drainOutcome{}, err
	}
	var first, last time.Duration
	outcome := func() drainOutcome {
		return drainOutcome{series: smp.stop(), consumed: consumed.Load(), distinct: led.distinct,
			duplicates: led.duplicate, first: first, last: last}
	}
	for led.distinct < spec.expect {
		recs, err := s.Poll(dctx)
		if len(recs) > 0 {
			last = time.Since(smp.start)
			if first == 0 {
				first = last
			}
		}
		for _, r := range recs {
			led.add(r.Partition, r.Offset)
		}
		consumed.Add(int64(len(recs)))
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				err = nil // the drain timeout; Run reports what was drained
			}
			return outcome(), err
		}
	}
	return outcome(), nil
}

// sampler reads a counter once per interval into a Series.
type sampler struct {
	start   time.Time
	counter *atomic.Int64
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	series  Series
}

func startSampler(counter *atomic.Int64, every time.Duration) *sampler {
	s := &sampler{start: time.Now(), counter: counter, done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case now := <-t.C:
				s.observe(now)
			}
		}
	}()
	return s
}

func (s *sampler) observe(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := now.Sub(s.start)
	if n := len(s.series.Samples); n > 0 && at <= s.series.Samples[n-1].At {
		return // a stop right on a tick
	}
	if err := s.series.Observe(at, s.counter.Load()); err != nil {
		// The clock is monotonic and the counter only grows: unreachable.
		panic(fmt.Sprintf("scenario sampler: %v", err))
	}
}

// stop ends the ticker, takes a last reading (the final partial second)
// and returns the series.
func (s *sampler) stop() Series {
	close(s.done)
	s.wg.Wait()
	s.observe(time.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.series
}
