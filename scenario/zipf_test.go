package scenario

import (
	"math"
	"slices"
	"testing"
)

func TestZipfWeights(t *testing.T) {
	tests := []struct {
		n     int
		alpha float64
		want  []float64 // leading weights, to 3 decimals
	}{
		// The seed's case 2: p0 64%, p1 16%, p11 under 1%.
		{12, 2, []float64{0.639, 0.160, 0.071, 0.040}},
		{4, 0, []float64{0.25, 0.25, 0.25, 0.25}},
		{3, 1, []float64{0.545, 0.273, 0.182}},
		{1, 2, []float64{1}},
	}
	for _, tc := range tests {
		w := ZipfWeights(tc.n, tc.alpha)
		var sum float64
		for _, x := range w {
			sum += x
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("n=%d alpha=%g: weights sum to %v", tc.n, tc.alpha, sum)
		}
		for i, want := range tc.want {
			if math.Abs(w[i]-want) > 0.0005 {
				t.Errorf("n=%d alpha=%g: weight %d = %.4f, want %.3f", tc.n, tc.alpha, i, w[i], want)
			}
		}
	}
	if w := ZipfWeights(12, 2); w[11] >= 0.01 || w[11] <= 0.004 {
		t.Errorf("p11 weight %.4f, want just under 0.5%% as in the seed", w[11])
	}
}

func TestZipfSplit(t *testing.T) {
	tests := []struct {
		total int64
		n     int
		alpha float64
		seed  uint64
	}{
		{2_000_000, 12, 2, 1},
		{200_000, 12, 2, 7},
		{5000, 12, 2, 3},
		{1000, 4, 0, 1},
		{0, 12, 2, 1},
		{1, 1, 2, 1},
	}
	for _, tc := range tests {
		got, err := ZipfSplit(tc.total, tc.n, tc.alpha, tc.seed)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.n {
			t.Fatalf("%+v: %d partitions", tc, len(got))
		}
		var sum int64
		for _, c := range got {
			sum += c
		}
		if sum != tc.total {
			t.Errorf("%+v: counts sum to %d", tc, sum)
		}
		// Each count within 5 standard deviations of the expected share:
		// a multinomial count is binomial with sd sqrt(n·w·(1-w)).
		for k, w := range ZipfWeights(tc.n, tc.alpha) {
			mean := float64(tc.total) * w
			sd := math.Sqrt(float64(tc.total) * w * (1 - w))
			if d := math.Abs(float64(got[k]) - mean); d > 5*sd+1 {
				t.Errorf("%+v: partition %d has %d, expected %.0f ± %.0f", tc, k, got[k], mean, sd)
			}
		}
		again, _ := ZipfSplit(tc.total, tc.n, tc.alpha, tc.seed)
		if !slices.Equal(got, again) {
			t.Errorf("%+v: same seed gave %v then %v", tc, got, again)
		}
	}
}

func TestZipfSplitSkew(t *testing.T) {
	got, err := ZipfSplit(2_000_000, 12, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	// With alpha 2 the counts fall with the rank: strictly for the head,
	// where the gaps are far beyond the sampling noise.
	for k := 1; k < 6; k++ {
		if got[k] >= got[k-1] {
			t.Errorf("partition %d has %d, not fewer than partition %d's %d", k, got[k], k-1, got[k-1])
		}
	}
	if share := float64(got[0]) / 2e6; share < 0.63 || share > 0.65 {
		t.Errorf("partition 0 has %.3f of the records, want about 0.639", share)
	}
	if ratio := float64(got[0]) / float64(got[11]); ratio < 130 || ratio > 160 {
		t.Errorf("p0/p11 = %.0f, want about 144 (12^2)", ratio)
	}
}

func TestZipfSplitSeeds(t *testing.T) {
	a, _ := ZipfSplit(100_000, 12, 2, 1)
	b, _ := ZipfSplit(100_000, 12, 2, 2)
	if slices.Equal(a, b) {
		t.Errorf("seeds 1 and 2 gave the same split %v", a)
	}
}

func TestZipfSplitRejects(t *testing.T) {
	for _, tc := range []struct {
		total int64
		n     int
		alpha float64
	}{
		{10, 0, 2}, {-1, 12, 2}, {10, 12, -1}, {10, 12, math.NaN()}, {10, 12, math.Inf(1)},
	} {
		if _, err := ZipfSplit(tc.total, tc.n, tc.alpha, 1); err == nil {
			t.Errorf("ZipfSplit(%d, %d, %v) succeeded", tc.total, tc.n, tc.alpha)
		}
	}
}
