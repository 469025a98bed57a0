package client

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestLatencyHistPercentiles(t *testing.T) {
	var h latencyHist
	for i := 1; i <= 1000; i++ {
		h.observe(time.Duration(i) * time.Millisecond)
	}
	s := h.stats()
	within := func(got, want time.Duration) bool {
		return float64(got) >= 0.9*float64(want) && float64(got) <= 1.1*float64(want)
	}
	if s.Count != 1000 || s.Max != time.Second || !within(s.P50, 500*time.Millisecond) || !within(s.P99, 990*time.Millisecond) || !within(s.Avg, 500500*time.Microsecond) {
		t.Fatalf("stats %+v", s)
	}
}

func TestMetricsWriteTo(t *testing.T) {
	p, _, step := simProducer(t, nil)
	for i := 0; i < 50; i++ {
		p.Send(context.Background(), &Record{Topic: "t", Value: []byte("v")}, nil)
	}
	for i := 0; i < 50; i++ {
		step()
	}
	var b strings.Builder
	if _, err := p.Metrics().WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"producer-node-metrics:outgoing-byte-total:{node-id=node-", "producer-metrics:record-send-total:{} : 50", "record-send-total:{topic=t, partition="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
