package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestPlanShareFetches(t *testing.T) {
	const wait = 500 * time.Millisecond
	type want struct {
		node    int32
		records int32
		wait    time.Duration
	}
	f, tr := false, true
	tests := []struct {
		name        string
		nodes       []int32
		hot, probe  []bool
		target      int
		max         int
		recordLimit bool
		idle        bool
		rotate      int
		want        []want
	}{
		{"record_limit, nobody hot, idle: the cap split, a long poll", []int32{0, 1}, []bool{f, f}, []bool{tr, tr}, -1, 10, true, true, 0,
			[]want{{0, 5, wait}, {1, 5, wait}}},
		{"nobody hot, not idle: no wait", []int32{0, 1, 2}, []bool{f, f, f}, []bool{f, f, f}, -1, 10, true, false, 1,
			[]want{{1, 4, 0}, {2, 3, 0}, {0, 3, 0}}},
		{"more leaders than records: rotation decides who fetches", []int32{0, 1, 2}, []bool{f, f, f}, []bool{tr, tr, tr}, -1, 2, true, false, 1,
			[]want{{1, 1, 0}, {2, 1, 0}}},
		{"the target gets the whole cap; empty leaders not due are left alone", []int32{0, 1, 2}, []bool{f, tr, f}, []bool{f, f, f}, 1, 10, true, false, 0,
			[]want{{1, 10, 0}}},
		{"other hot leaders wait for their turn", []int32{0, 1, 2}, []bool{tr, tr, tr}, []bool{tr, tr, tr}, 2, 10, true, false, 0,
			[]want{{2, 10, 0}}},
		{"empty leaders due probe with one record each", []int32{0, 1, 2}, []bool{f, tr, f}, []bool{tr, f, tr}, 1, 10, true, false, 0,
			[]want{{1, 8, 0}, {0, 1, 0}, {2, 1, 0}}},
		{"probes never take the target's last record", []int32{0, 1, 2}, []bool{f, tr, f}, []bool{tr, f, tr}, 1, 2, true, false, 2,
			[]want{{1, 1, 0}, {2, 1, 0}}},
		{"batch_optimized: soft cap per leader", []int32{3, 4}, []bool{tr, f}, []bool{f, f}, -1, 500, false, false, 0,
			[]want{{3, 500, 0}, {4, 500, 0}}},
		{"batch_optimized idle: everyone long-polls", []int32{3, 4}, []bool{f, f}, []bool{f, f}, -1, 500, false, true, 0,
			[]want{{3, 500, wait}, {4, 500, wait}}},
		{"no leaders", nil, nil, nil, -1, 10, true, false, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := planShareFetches(shareRound{
				nodes: tc.nodes, hot: tc.hot, probe: tc.probe, target: tc.target, maxPollRecords: tc.max,
				recordLimit: tc.recordLimit, idle: tc.idle, maxWait: wait, rotate: tc.rotate,
			})
			var g []want
			total := 0
			for _, p := range got {
				g = append(g, want{p.node, p.maxRecords, p.maxWait})
				total += int(p.maxRecords)
				if p.maxRecords <= 0 {
					t.Fatalf("plan %+v asks for no record", p)
				}
			}
			if !slices.Equal(g, tc.want) {
				t.Fatalf("plan = %v, want %v", g, tc.want)
			}
			if tc.recordLimit && total > tc.max {
				t.Fatalf("record_limit round asks for %d records, cap %d", total, tc.max)
			}
		})
	}
}

// TestShareRoundTurns: which leader a record_limit round serves, and who
// is probed, from what the leaders' last answers said. Share case 3 (one
// consumer, six leaders, Zipf-skewed dumps) found a consumer serving a
// trickling leader at 100 records/s for seconds while 24,000 records
// waited on a leader it had left with a hint of 0: a hot leader off the
// target was never asked again, and a target giving less than asked was
// kept for 64 rounds.
func TestShareRoundTurns(t *testing.T) {
	long := time.Now().Add(-time.Second)
	type ldr struct {
		hadData, full, knows bool
		backlog              int64
		asked                time.Time
	}
	type want struct {
		node    int32
		records int32
	}
	tests := []struct {
		name    string
		hints   bool
		leaders []ldr // nodes 0, 1, 2
		target  int32
		want    []want
	}{
		{"hints: a hot leader left with a stale hint is probed", true,
			[]ldr{{true, true, true, 0, long}, {true, false, true, 3, time.Now()}, {false, false, true, 0, time.Now()}}, 1,
			[]want{{1, 9}, {0, 1}}},
		{"hints: the probe's answer moves the round to the heavy leader", true,
			[]ldr{{true, true, true, 24000, time.Now()}, {true, false, true, 3, time.Now()}, {false, false, true, 0, time.Now()}}, 1,
			[]want{{0, 10}}},
		{"hints: two leaders with records share the cap by backlog", true,
			[]ldr{{true, true, true, 5, time.Now()}, {true, true, true, 3, time.Now()}, {false, false, true, 0, time.Now()}}, 1,
			[]want{{0, 7}, {1, 3}}},
		{"hints: shared by backlog, the empty leader due for a probe", true,
			[]ldr{{true, true, true, 6, time.Now()}, {true, true, true, 2, time.Now()}, {true, false, true, 0, long}}, 0,
			[]want{{0, 7}, {1, 2}, {2, 1}}},
		{"hints: a leader with the cap's worth waiting takes the round alone", true,
			[]ldr{{true, true, true, 10, time.Now()}, {true, true, true, 6, time.Now()}, {false, false, true, 0, long}}, 0,
			[]want{{0, 9}, {2, 1}}},
		{"no hints: a target that gave less than asked turns to a full leader", false,
			[]ldr{{true, true, false, 0, time.Now()}, {true, false, false, 0, time.Now()}, {false, false, false, 0, time.Now()}}, 1,
			[]want{{0, 10}}},
		{"no hints: a full target keeps the round; hot leaders are not probed", false,
			[]ldr{{true, true, false, 0, long}, {true, true, false, 0, time.Now()}, {false, false, false, 0, long}}, 1,
			[]want{{1, 9}, {2, 1}}},
		{"no hints: nobody full, every leader asked", false,
			[]ldr{{true, false, false, 0, time.Now()}, {true, false, false, 0, time.Now()}, {false, false, false, 0, time.Now()}}, 1,
			[]want{{0, 4}, {1, 3}, {2, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &ShareConsumer{leaders: map[int32]*shareLeader{}, target: tc.target, stick: 1}
			s.cfg.recordLimit, s.cfg.backlogHints, s.cfg.fetchMaxWait = true, tc.hints, 500*time.Millisecond
			for i, l := range tc.leaders {
				s.leaders[int32(i)] = &shareLeader{hadData: l.hadData, full: l.full, knows: l.knows, backlog: l.backlog, asked: l.asked}
			}
			var got []want
			for _, p := range planShareFetches(s.roundState([]int32{0, 1, 2}, false, 0, 10)) {
				got = append(got, want{p.node, p.maxRecords})
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("round %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSplitByBacklog(t *testing.T) {
	tests := []struct {
		total   int
		backlog []int64
		want    []int
	}{
		{10, []int64{5, 3, 0}, []int{7, 3, 0}},
		{10, []int64{24000, 3}, []int{10, 0}},
		{9, []int64{1, 1, 1}, []int{3, 3, 3}},
		{2, []int64{1, 1, 1}, []int{1, 1, 0}},
		{500, []int64{61, 25, 9, 5}, []int{305, 125, 45, 25}},
		{10, []int64{0, 0}, []int{0, 0}},
		{0, []int64{4}, []int{0}},
		{7, []int64{1 << 60, 1 << 60}, []int{4, 3}},
	}
	for _, tc := range tests {
		got := splitByBacklog(tc.total, tc.backlog)
		if !slices.Equal(got, tc.want) {
			t.Errorf("splitByBacklog(%d, %v) = %v, want %v", tc.total, tc.backlog, got, tc.want)
		}
		sum := 0
		for _, n := range got {
			sum += n
		}
		if sum > tc.total {
			t.Errorf("splitByBacklog(%d, %v) hands out %d", tc.total, tc.backlog, sum)
		}
	}
}

func TestShareConfig(t *testing.T) {
	tests := []struct {
		props map[string]string
		bad   string
	}{
		{map[string]string{"bootstrap.servers": "h:1"}, "group.id"},
		{map[string]string{"bootstrap.servers": "h:1", "group.id": "g", "share.acquire.mode": "greedy"}, "share.acquire.mode"},
		{map[string]string{"bootstrap.servers": "h:1", "group.id": "g", "share.acknowledgement.mode": "auto"}, "share.acknowledgement.mode"},
		{map[string]string{"bootstrap.servers": "h:1", "group.id": "g", "max.poll.records": "0"}, "max.poll.records"},
		{map[string]string{"bootstrap.servers": "h:1", "group.id": "g", "share.acquire.mode": "record_limit"}, ""},
	}
	for _, tc := range tests {
		_, err := parseShareConfig(tc.props)
		var ce *ConfigError
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%v: %v", tc.props, err)
		case tc.bad != "" && (!errors.As(err, &ce) || ce.Key != tc.bad):
			t.Errorf("%v: err %v, want a ConfigError for %s", tc.props, err, tc.bad)
		}
	}
}

// shareTopic creates a topic and makes group read it from the start
// (share.auto.offset.reset defaults to latest).
func shareTopic(t *testing.T, partitions int32, group string) string {
	t.Helper()
	ctx := testCtx(t)
	a, err := NewAdmin(map[string]string{"bootstrap.servers": bootstrap(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	topic := uniqueTopic(t)
	if err := a.CreateTopics(ctx, TopicSpec{Name: topic, Partitions: partitions, ReplicationFactor: 1}); err != nil {
		t.Fatal(err)
	}
	earliest := "earliest"
	if err := a.AlterConfigs(ctx, ConfigResourceType(32), group, AlterConfigOp{Name: "share.auto.offset.reset", Value: &earliest}); err != nil {
		t.Fatal(err)
	}
	return topic
}

func newShare(t *testing.T, group string, extra map[string]string) *ShareConsumer {
	t.Helper()
	props := map[string]string{"bootstrap.servers": bootstrap(t), "group.id": group, "fetch.max.wait.ms": "100"}
	for k, v := range extra {
		props[k] = v
	}
	s, err := NewShareConsumer(props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

func produceTo(t *testing.T, topic string, part int32, n int) {
	t.Helper()
	p, err := NewProducer(map[string]string{"bootstrap.servers": bootstrap(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer p.Close(ctx)
	for i := range n {
		p.Send(ctx, &Record{Topic: topic, Partition: PartitionOf(part), Value: fmt.Appendf(nil, "%d-%d", part, i)}, func(_ RecordMetadata, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationShareTwoConsumersExactlyOnce(t *testing.T) {
	group := "share-once-" + uniqueTopic(t)
	topic := shareTopic(t, 3, group)
	const perPart = 100
	for p := range int32(3) {
		produceTo(t, topic, p, perPart)
	}
	ctx := testCtx(t)
	var mu sync.Mutex
	seen := map[string]int{}
	byConsumer := [2]int{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		s := newShare(t, group, nil)
		if err := s.Subscribe([]string{topic}); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					if err := s.CommitSync(ctx); err != nil {
						t.Errorf("commit: %v", err)
					}
					return
				default:
				}
				recs, err := s.Poll(ctx)
				if err != nil {
					t.Errorf("poll: %v", err)
					return
				}
				mu.Lock()
				for _, r := range recs {
					seen[string(r.Value)]++
					byConsumer[i]++
				}
				mu.Unlock()
			}
		}()
	}
	eventually(t, 30*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < 3*perPart {
			return fmt.Errorf("%d of %d records seen", len(seen), 3*perPart)
		}
		return nil
	})
	close(done)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for v, n := range seen {
		if n != 1 {
			t.Errorf("record %s delivered %d times", v, n)
		}
	}
	if len(seen) != 3*perPart {
		t.Errorf("%d distinct records, want %d", len(seen), 3*perPart)
	}
	t.Logf("records per consumer: %v", byConsumer)
}

// pollUntil polls s until pred holds for the records gathered, or fails.
func pollUntil(t *testing.T, s *ShareConsumer, timeout time.Duration, pred func([]*ShareRecord) bool) []*ShareRecord {
	t.Helper()
	ctx := testCtx(t)
	var all []*ShareRecord
	eventually(t, timeout, func() error {
		recs, err := s.Poll(ctx)
		if err != nil {
			return err
		}
		all = append(all, recs...)
		if !pred(all) {
			return fmt.Errorf("have %d records", len(all))
		}
		return nil
	})
	return all
}

func TestIntegrationShareReleaseAndReject(t *testing.T) {
	group := "share-ack-" + uniqueTopic(t)
	topic := shareTopic(t, 1, group)
	produceTo(t, topic, 0, 2) // values 0-0 and 0-1
	ctx := testCtx(t)
	s := newShare(t, group, map[string]string{"share.acknowledgement.mode": "explicit"})
	if err := s.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	first := pollUntil(t, s, 20*time.Second, func(r []*ShareRecord) bool { return len(r) >= 2 })
	for _, r := range first {
		if r.DeliveryCount != 1 {
			t.Errorf("first delivery of %s has count %d", r.Value, r.DeliveryCount)
		}
		typ := AckRelease
		if string(r.Value) == "0-1" {
			typ = AckReject
		}
		if err := s.Acknowledge(r, typ); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Acknowledge(first[0], AckAccept); !errors.Is(err, ErrNotDelivered) {
		t.Errorf("second acknowledgement of one record: %v, want ErrNotDelivered", err)
	}
	if err := s.CommitSync(ctx); err != nil {
		t.Fatal(err)
	}
	again := pollUntil(t, s, 20*time.Second, func(r []*ShareRecord) bool { return len(r) >= 1 })
	if len(again) != 1 || string(again[0].Value) != "0-0" || again[0].DeliveryCount != 2 {
		for _, r := range again {
			t.Errorf("redelivered %s count %d", r.Value, r.DeliveryCount)
		}
		t.Fatalf("want exactly the released record 0-0 with delivery count 2")
	}
	if err := s.Acknowledge(again[0], AckAccept); err != nil {
		t.Fatal(err)
	}
	// The rejected record must not come back: poll for a while (each
	// empty poll waits up to fetch.max.wait.ms=100).
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		recs, err := s.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			t.Errorf("record %s delivered again (count %d)", r.Value, r.DeliveryCount)
		}
	}
}

func TestIntegrationShareRecordLimitCap(t *testing.T) {
	group := "share-cap-" + uniqueTopic(t)
	topic := shareTopic(t, 2, group)
	produceTo(t, topic, 0, 60)
	produceTo(t, topic, 1, 60)
	s := newShare(t, group, map[string]string{"share.acquire.mode": "record_limit", "max.poll.records": "7"})
	if err := s.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	seen := map[string]bool{}
	eventually(t, 30*time.Second, func() error {
		recs, err := s.Poll(ctx)
		if err != nil {
			return err
		}
		if len(recs) > 7 {
			t.Fatalf("poll returned %d records, max.poll.records=7", len(recs))
		}
		for _, r := range recs {
			seen[string(r.Value)] = true
		}
		if len(seen) < 120 {
			return fmt.Errorf("%d of 120 records", len(seen))
		}
		return nil
	})
	// The fetches carried the acknowledgements with their durability
	// deferred (wiretag.ShareFetchDeferAcks): the commit asks each leader
	// that took some, and the broker answers once they are durable; the
	// close's final ShareAcknowledge waits the same way.
	if err := s.CommitSync(ctx); err != nil {
		t.Fatalf("CommitSync after deferred acknowledgements: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestIntegrationShareNoStall drains a backlog on one partition of a
// two-partition topic with record_limit, fetch.max.wait.ms=500 and a small
// max.poll.records, and checks the wait rule on the wire: no Poll that
// returns records, and not the first empty Poll after them, waits
// fetch.max.wait.ms; the next empty Poll does (the consumer long-polls
// once idle).
func TestIntegrationShareNoStall(t *testing.T) {
	group := "share-stall-" + uniqueTopic(t)
	topic := shareTopic(t, 2, group)
	produceTo(t, topic, 0, 200)
	s := newShare(t, group, map[string]string{"share.acquire.mode": "record_limit", "max.poll.records": "10", "fetch.max.wait.ms": "500"})
	if err := s.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	// Wait for the first records (assignment takes a heartbeat).
	got := len(pollUntil(t, s, 20*time.Second, func(r []*ShareRecord) bool { return len(r) > 0 }))
	var slowest time.Duration
	polls := 0
	for got < 200 && polls < 1000 {
		start := time.Now()
		recs, err := s.Poll(ctx)
		d := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		polls++
		if len(recs) == 0 {
			t.Fatalf("empty poll with %d of 200 records drained", got)
		}
		got += len(recs)
		slowest = max(slowest, d)
	}
	if got != 200 {
		t.Fatalf("drained %d of 200", got)
	}
	start := time.Now()
	recs, err := s.Poll(ctx)
	firstEmpty := time.Since(start)
	if err != nil || len(recs) != 0 {
		t.Fatalf("poll after the drain: %d records, %v", len(recs), err)
	}
	start = time.Now()
	if _, err := s.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	idle := time.Since(start)
	t.Logf("%d polls while draining, slowest %v; first empty poll %v; idle poll %v", polls, slowest, firstEmpty, idle)
	if slowest >= 400*time.Millisecond {
		t.Errorf("a poll with records took %v: waited out fetch.max.wait.ms", slowest)
	}
	if firstEmpty >= 400*time.Millisecond {
		t.Errorf("the first empty poll after records took %v, want a 0-wait round", firstEmpty)
	}
	if idle < 400*time.Millisecond {
		t.Errorf("an idle poll took %v, want a long poll of fetch.max.wait.ms", idle)
	}
}

func TestIntegrationShareCloseReleases(t *testing.T) {
	group := "share-close-" + uniqueTopic(t)
	topic := shareTopic(t, 1, group)
	produceTo(t, topic, 0, 5)
	a := newShare(t, group, map[string]string{"share.acknowledgement.mode": "explicit"})
	if err := a.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	held := pollUntil(t, a, 20*time.Second, func(r []*ShareRecord) bool { return len(r) >= 5 })
	ctx := testCtx(t)
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Poll(ctx); !errors.Is(err, ErrConsumerClosed) {
		t.Errorf("poll after close: %v, want ErrConsumerClosed", err)
	}
	b := newShare(t, group, nil)
	if err := b.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	// Without the release the records would stay locked for
	// share.record.lock.duration.ms (30 s), longer than this wait. A
	// release by session close undoes the delivery, as in Kafka, so the
	// count stays 1.
	again := pollUntil(t, b, 20*time.Second, func(r []*ShareRecord) bool { return len(r) >= len(held) })
	for i, r := range again {
		if i >= len(held) || string(r.Value) != string(held[i].Value) {
			t.Errorf("redelivery %d is %s, want the released records in order", i, r.Value)
		}
		if r.DeliveryCount != 1 {
			t.Errorf("record %s: delivery count %d after a release by close, want 1", r.Value, r.DeliveryCount)
		}
	}
}

func TestIntegrationShareCommitAsync(t *testing.T) {
	group := "share-async-" + uniqueTopic(t)
	topic := shareTopic(t, 1, group)
	produceTo(t, topic, 0, 3)
	implicit := newShare(t, "other-"+group, nil)
	if err := implicit.Acknowledge(&ShareRecord{}, AckReject); !errors.Is(err, ErrNotExplicit) {
		t.Errorf("Acknowledge in implicit mode: %v, want ErrNotExplicit", err)
	}
	a := newShare(t, group, map[string]string{"share.acknowledgement.mode": "explicit"})
	if err := a.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	got := pollUntil(t, a, 20*time.Second, func(r []*ShareRecord) bool { return len(r) >= 3 })
	for _, r := range got {
		if err := a.Acknowledge(r, AckRelease); err != nil {
			t.Fatal(err)
		}
	}
	ctx := testCtx(t)
	done := make(chan error, 1)
	a.CommitAsync(ctx, func(err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("CommitAsync: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("CommitAsync never called back")
	}
	// a stays open and does not poll: only the released acknowledgements
	// sent by CommitAsync can hand the records to b before their locks
	// (30 s) expire.
	b := newShare(t, group, nil)
	if err := b.Subscribe([]string{topic}); err != nil {
		t.Fatal(err)
	}
	again := pollUntil(t, b, 20*time.Second, func(r []*ShareRecord) bool { return len(r) >= 3 })
	for _, r := range again {
		if r.DeliveryCount != 2 {
			t.Errorf("record %s: delivery count %d after RELEASE, want 2", r.Value, r.DeliveryCount)
		}
	}
}
