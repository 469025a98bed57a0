package scenario

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// The backlog is read again until every partition shows what was loaded
// into it (high watermarks trail an acks=1 load with replication), and a
// backlog that never gets there ends with the context, naming the
// partition.
func TestWaitLoaded(t *testing.T) {
	counts := []int64{5, 3}
	readings := [][]int64{{2, 3}, {5, 1}, {5, 3}}
	reads := 0
	read := func(context.Context) ([]int64, error) {
		r := readings[min(reads, len(readings)-1)]
		reads++
		return r, nil
	}
	bl, err := waitLoaded(context.Background(), "t", counts, time.Millisecond, read)
	if err != nil || !slices.Equal(bl, []int64{5, 3}) || reads != 3 {
		t.Fatalf("got %v, %v after %d reads; want [5 3] after 3", bl, err, reads)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	stuck := func(context.Context) ([]int64, error) { return []int64{5, 2}, nil }
	if _, err := waitLoaded(ctx, "t", counts, time.Millisecond, stuck); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a backlog short of the load: %v, want the context's deadline", err)
	}
}
