package scenario

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Quantiles are within a bucket's width (about 3%) of the exact ones.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var all []time.Duration
	for range 100_000 {
		d := time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond))
		h.Record(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		exact := all[int(q*float64(len(all)))-1]
		got := h.Quantile(q)
		if diff := float64(got-exact) / float64(exact); diff > 0.04 || diff < -0.04 {
			t.Errorf("q%v: %v, exact %v", q, got, exact)
		}
	}
	if h.Max() != all[len(all)-1] || h.Count() != int64(len(all)) {
		t.Errorf("max %v count %d", h.Max(), h.Count())
	}
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	if h.Mean() != sum/time.Duration(len(all)) {
		t.Errorf("mean %v, want %v", h.Mean(), sum/time.Duration(len(all)))
	}
}

func TestHistogramEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Mean() != 0 {
		t.Fatal("an empty histogram has no quantile")
	}
	h.Record(-time.Second) // a clock step: counted as 0
	h.Record(40 * time.Microsecond)
	h.Record(100 * time.Hour)
	if h.Quantile(1) != 100*time.Hour {
		t.Fatalf("q1 = %v, want the max", h.Quantile(1))
	}
	if h.Quantile(0.5) != 40*time.Microsecond {
		t.Fatalf("q0.5 = %v, want 40µs (exact below 64µs)", h.Quantile(0.5))
	}
	var m Histogram
	m.Merge(&h)
	m.Merge(&h)
	if m.Count() != 6 || m.Max() != h.Max() {
		t.Fatalf("merged count %d max %v", m.Count(), m.Max())
	}
	for b := range histBuckets - 1 {
		if bucketOf(bucketLow(b)) != b || bucketLow(b+1) <= bucketLow(b) {
			t.Fatalf("bucket %d: low %d maps back to %d", b, bucketLow(b), bucketOf(bucketLow(b)))
		}
	}
}
