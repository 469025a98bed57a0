package scenario

import (
	"context"
	"testing"
	"time"
)

// TestPollStampsWhenThePollReturns: a record that reaches the broker
// while a Poll waits is delivered when the Poll returns, and its
// end-to-end latency runs to then: never negative, never shorter than
// the part of the Poll after its arrival.
func TestPollStampsWhenThePollReturns(t *testing.T) {
	const arriveAfter, pollTakes = 60 * time.Millisecond, 120 * time.Millisecond
	w := &consumerWorker{pollRecords: func(ctx context.Context) ([]polled, error) {
		start := time.Now()
		time.Sleep(pollTakes)
		return []polled{{partition: 3, offset: 7, timestamp: start.Add(arriveAfter)}}, nil
	}}
	ds, err := w.poll(context.Background())
	if err != nil || len(ds) != 1 {
		t.Fatalf("poll: %v, %d deliveries", err, len(ds))
	}
	d := ds[0]
	if d.partition != 3 || d.offset != 7 {
		t.Fatalf("delivery %+v, want partition 3 offset 7", d)
	}
	if d.e2e < pollTakes-arriveAfter {
		t.Fatalf("end-to-end %v, want at least the %v the record waited in the Poll", d.e2e, pollTakes-arriveAfter)
	}
}
