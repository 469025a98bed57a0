package log

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// ScanRecords visits every record from the log start, across segments and
// reads of more than 1 MiB, in offset order; an error from fn stops it.
func TestScanRecords(t *testing.T) {
	clock := newFakeClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 256 << 10
	l := openTestLog(t, t.TempDir(), cfg, clock)
	defer l.Close()
	var bb BatchBuilder
	const batches, per = 40, 50
	for i := range batches {
		bb.Reset(clock.now().UnixMilli())
		for j := range per {
			bb.Add(clock.now().UnixMilli(), fmt.Appendf(nil, "k%d", i*per+j), make([]byte, 600), nil)
		}
		if _, err := l.Append(bb.Build(), AppendOptions{LeaderEpoch: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.AdvanceStartOffset(per, l.EndOffset()); err != nil {
		t.Fatal(err)
	}
	var next int64 = -1
	n := 0
	err := l.ScanRecords(context.Background(), func(r *Record) error {
		if next >= 0 && r.Offset != next {
			return fmt.Errorf("offset %d after %d", r.Offset, next-1)
		}
		if want := fmt.Sprintf("k%d", r.Offset); string(r.Key) != want {
			return fmt.Errorf("offset %d has key %q", r.Offset, r.Key)
		}
		next = r.Offset + 1
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first := l.EndOffset() - int64(n); n == 0 || next != l.EndOffset() || first > l.StartOffset() {
		t.Fatalf("visited %d records ending at %d; log [%d, %d)", n, next, l.StartOffset(), l.EndOffset())
	}
	stop := errors.New("stop")
	calls := 0
	if err := l.ScanRecords(context.Background(), func(*Record) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn's error: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.ScanRecords(ctx, func(*Record) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
