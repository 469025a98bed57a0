package client

import (
	"testing"
	"time"
)

func TestNodeRTTSlow(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		rtt  map[int32]time.Duration
		slow map[int32]bool
	}{
		{"the KIP's slow broker", map[int32]time.Duration{0: 60 * ms, 1: 2 * ms, 2: 3 * ms}, map[int32]bool{0: true}},
		{"all far away", map[int32]time.Duration{0: 60 * ms, 1: 55 * ms, 2: 70 * ms}, nil},
		{"slow but under the floor", map[int32]time.Duration{0: 4 * ms, 1: 100 * time.Microsecond, 2: 200 * time.Microsecond}, nil},
		{"one broker known", map[int32]time.Duration{0: time.Second}, nil},
		{"two brokers, one slow", map[int32]time.Duration{0: 100 * ms, 1: ms}, map[int32]bool{0: true}},
		{"a little slower", map[int32]time.Duration{0: 9 * ms, 1: 3 * ms, 2: 3 * ms}, nil},
	}
	for _, tc := range cases {
		r := nodeRTT(tc.rtt)
		for n := range tc.rtt {
			if got := r.slow(n); got != tc.slow[n] {
				t.Errorf("%s: node %d slow=%v, want %v", tc.name, n, got, tc.slow[n])
			}
		}
	}
	if !(nodeRTT{}).cautious(3) || (nodeRTT{3: time.Millisecond, 4: time.Millisecond}).cautious(3) {
		t.Error("an unknown broker must get one request at a time, a known fast one its pipeline")
	}
	// Smoothing: a broker that recovers stops being slow after a few
	// requests.
	r := nodeRTT{0: 80 * ms, 1: 2 * ms, 2: 2 * ms}
	n := 0
	for r.slow(0) {
		r.observe(0, 2*ms)
		n++
		if n > 20 {
			t.Fatal("still slow after 20 fast requests")
		}
	}
	if n < 2 {
		t.Errorf("one fast request cleared a slow broker (%d)", n)
	}
}
