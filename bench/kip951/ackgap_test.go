package main

import "testing"

func TestLongestGap(t *testing.T) {
	tests := []struct {
		name     string
		ts       []int64
		from, to int64
		gap, at  int64
	}{
		{"gap inside the window", []int64{0, 10, 20, 70, 80}, 15, 75, 50, 20},
		{"gap straddling the window's start", []int64{0, 50, 55}, 40, 60, 50, 0},
		{"gap straddling the window's end", []int64{0, 5, 100}, 0, 10, 95, 5},
		{"gap after the window is not counted", []int64{0, 5, 10, 100}, 0, 8, 5, 0},
		{"no time at all: the whole window", nil, 10, 30, 20, 10},
		{"nothing after the last time", []int64{0, 5}, 0, 40, 35, 5},
		{"gap ending exactly at from is before the window", []int64{0, 40, 41}, 40, 50, 9, 41},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gap, at := longestGap(tt.ts, tt.from, tt.to)
			if gap != tt.gap || at != tt.at {
				t.Fatalf("longestGap(%v, %d, %d) = %d at %d, want %d at %d", tt.ts, tt.from, tt.to, gap, at, tt.gap, tt.at)
			}
		})
	}
}

func TestAnalyse(t *testing.T) {
	// Two partitions, records i%2; record 3 never acknowledged.
	sends := []int64{0, 10, 20, 30, 40, 50}
	acks := []int64{5, 15, 200, 0, 210, 55}
	perPart := [][]int64{{5, 200, 210}, {15, 55}}
	ackTimes := []int64{5, 15, 55, 200, 210}
	s := analyse(10, 100, ackTimes, perPart, sends, acks)
	if s.globalGap != 145 || s.gapStart != 55 {
		t.Errorf("global gap %d at %d, want 145 at 55", s.globalGap, s.gapStart)
	}
	if s.partGap != 195 || s.partGapPart != 0 {
		t.Errorf("partition gap %d on %d, want 195 on 0", s.partGap, s.partGapPart)
	}
	if s.sent != 5 || s.lost != 1 || s.maxLatency != 180 {
		t.Errorf("sent %d lost %d max latency %d, want 5, 1, 180", s.sent, s.lost, s.maxLatency)
	}
}
