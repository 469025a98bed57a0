package client

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// produceN writes n keyed records to topic and returns the count per
// partition.
func produceN(t *testing.T, topic string, n int) map[int32]int {
	t.Helper()
	p, err := NewProducer(map[string]string{"bootstrap.servers": bootstrap(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer p.Close(ctx)
	per := map[int32]int{}
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		p.Send(ctx, &Record{Topic: topic, Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "%d", i)}, func(md RecordMetadata, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			mu.Lock()
			per[md.Partition]++
			mu.Unlock()
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return per
}

func TestIntegrationAssignConsumer(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 3)
	per := produceN(t, topic, 300)
	c, err := NewConsumer(map[string]string{"bootstrap.servers": bootstrap(t), "auto.offset.reset": "earliest", "max.poll.records": "50"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer c.Close(ctx)
	tps := []TopicPartition{{topic, 0}, {topic, 1}, {topic, 2}}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	c.Pause(tps[2])
	next := map[int32]int64{}
	seen := 0
	eventually(t, 20*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		recs, err := c.Poll(pctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) > 50 {
			t.Fatalf("poll returned %d records, max.poll.records is 50", len(recs))
		}
		for _, r := range recs {
			if r.Partition == 2 {
				t.Fatal("record from a paused partition")
			}
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			seen++
		}
		if seen < per[0]+per[1] {
			return fmt.Errorf("seen %d of %d", seen, per[0]+per[1])
		}
		return nil
	})
	c.Resume(tps[2])
	if err := c.Seek(tps[0], 1); err != nil {
		t.Fatal(err)
	}
	got2, got0 := 0, false
	eventually(t, 20*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		recs, _ := c.Poll(pctx)
		cancel()
		for _, r := range recs {
			if r.Partition == 2 {
				got2++
			}
			if r.Partition == 0 && r.Offset == 1 {
				got0 = true
			}
		}
		if got2 < per[2] || !got0 {
			return fmt.Errorf("partition 2: %d of %d; re-read after seek: %v", got2, per[2], got0)
		}
		return nil
	})
	pos, err := c.Position(ctx, tps[0])
	if err != nil || pos != int64(per[0]) {
		t.Fatalf("position %d (%v), want %d", pos, err, per[0])
	}
}

// TestIntegrationGroups runs two members of a group per protocol and
// assignor; together they must read every record, and after both commit
// and close, a fresh member of the group finds nothing left.
func TestIntegrationGroups(t *testing.T) {
	for _, tc := range []struct{ name, protocol, assignor string }{
		{"classic-range", "classic", "org.apache.kafka.clients.consumer.RangeAssignor"},
		{"classic-roundrobin", "classic", "org.apache.kafka.clients.consumer.RoundRobinAssignor"},
		{"classic-cooperative-sticky", "classic", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
		{"consumer-protocol", "consumer", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAdmin(t)
			topic := uniqueTopic(t)
			createTopic(t, a, topic, 4)
			const n = 400
			group := "g-" + topic
			props := map[string]string{
				"bootstrap.servers": bootstrap(t), "group.id": group, "group.protocol": tc.protocol,
				"auto.offset.reset": "earliest", "enable.auto.commit": "false",
			}
			if tc.assignor != "" {
				props["partition.assignment.strategy"] = tc.assignor
				props["heartbeat.interval.ms"] = "300"
				props["session.timeout.ms"] = "10000"
			}
			ctx := testCtx(t)
			var mu sync.Mutex
			seen := map[string]bool{}
			var assigned [2]map[TopicPartition]bool
			assigned[0], assigned[1] = map[TopicPartition]bool{}, map[TopicPartition]bool{}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for i := 0; i < 2; i++ {
				c, err := NewConsumer(props)
				if err != nil {
					t.Fatal(err)
				}
				l := &RebalanceListener{
					OnAssigned: func(_ context.Context, _ *Consumer, tps []TopicPartition) {
						mu.Lock()
						for _, tp := range tps {
							assigned[i][tp] = true
						}
						mu.Unlock()
					},
					OnRevoked: func(ctx context.Context, c *Consumer, tps []TopicPartition) {
						_ = c.CommitSync(ctx, nil)
						mu.Lock()
						for _, tp := range tps {
							delete(assigned[i], tp)
						}
						mu.Unlock()
					},
				}
				if err := c.Subscribe([]string{topic}, l); err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close(ctx)
					for {
						select {
						case <-stop:
							if err := c.CommitSync(ctx, nil); err != nil {
								t.Errorf("commit: %v", err)
							}
							return
						default:
						}
						pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
						recs, err := c.Poll(pctx)
						cancel()
						if err != nil {
							t.Errorf("poll: %v", err)
							return
						}
						mu.Lock()
						for _, r := range recs {
							seen[fmt.Sprint(r.Partition, "/", r.Offset)] = true
						}
						mu.Unlock()
					}
				}()
			}
			// Both members end up sharing the four partitions.
			eventually(t, 40*time.Second, func() error {
				mu.Lock()
				defer mu.Unlock()
				a, b := len(assigned[0]), len(assigned[1])
				if a == 0 || b == 0 || a+b != 4 {
					return fmt.Errorf("assignments %v / %v", assigned[0], assigned[1])
				}
				for tp := range assigned[0] {
					if assigned[1][tp] {
						return fmt.Errorf("%v assigned to both", tp)
					}
				}
				return nil
			})
			produceN(t, topic, n)
			eventually(t, 40*time.Second, func() error {
				mu.Lock()
				defer mu.Unlock()
				if len(seen) < n {
					return fmt.Errorf("seen %d of %d", len(seen), n)
				}
				return nil
			})
			close(stop)
			wg.Wait()
			// Everything was committed: a new member reads nothing.
			c, err := NewConsumer(props)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			committed, err := c.Committed(ctx, []TopicPartition{{topic, 0}, {topic, 1}, {topic, 2}, {topic, 3}})
			if err != nil {
				t.Fatal(err)
			}
			total := int64(0)
			for _, off := range committed {
				total += off
			}
			if total != n {
				t.Fatalf("committed offsets sum to %d, want %d: %v", total, n, committed)
			}
		})
	}
}

// TestIntegrationMaxPollInterval stops polling past max.poll.interval.ms: the
// member leaves, the next Poll reports the partitions lost and rejoins.
func TestIntegrationMaxPollInterval(t *testing.T) {
	for _, protocol := range []string{"classic", "consumer"} {
		t.Run(protocol, func(t *testing.T) {
			a := newTestAdmin(t)
			topic := uniqueTopic(t)
			createTopic(t, a, topic, 2)
			props := map[string]string{
				"bootstrap.servers": bootstrap(t), "group.id": "mpi-" + topic, "group.protocol": protocol,
				"max.poll.interval.ms": "1500",
			}
			if protocol == "classic" {
				props["heartbeat.interval.ms"], props["session.timeout.ms"] = "100", "10000"
			}
			c, err := NewConsumer(props)
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			defer c.Close(ctx)
			var mu sync.Mutex
			lost := 0
			l := &RebalanceListener{OnLost: func(_ context.Context, _ *Consumer, tps []TopicPartition) {
				mu.Lock()
				lost += len(tps)
				mu.Unlock()
			}}
			if err := c.Subscribe([]string{topic}, l); err != nil {
				t.Fatal(err)
			}
			pollUntilAssigned := func() {
				eventually(t, 30*time.Second, func() error {
					pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
					defer cancel()
					if _, err := c.Poll(pctx); err != nil {
						return err
					}
					if len(c.Assignment()) != 2 {
						return fmt.Errorf("assignment %v", c.Assignment())
					}
					return nil
				})
			}
			pollUntilAssigned()
			// Stay away from Poll until the member has left.
			eventually(t, 20*time.Second, func() error {
				if !c.pollOverdue() {
					return fmt.Errorf("not overdue yet")
				}
				id, member := c.group.identity()
				if protocol == "classic" && member != "" {
					return fmt.Errorf("still member %s generation %d", member, id)
				}
				if protocol == "consumer" && id != 0 {
					return fmt.Errorf("still at epoch %d", id)
				}
				return nil
			})
			pollUntilAssigned()
			mu.Lock()
			defer mu.Unlock()
			if lost != 2 {
				t.Fatalf("%d partitions reported lost, want 2", lost)
			}
		})
	}
}

// TestIntegrationAssignAutoCommit: a consumer with group.id and Assign
// commits its position on Close (auto-commit), and a second one resumes
// there.
func TestIntegrationAssignAutoCommit(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 1)
	produceN(t, topic, 50)
	props := map[string]string{"bootstrap.servers": bootstrap(t), "group.id": "assign-" + topic, "auto.offset.reset": "earliest", "max.poll.records": "20"}
	ctx := testCtx(t)
	tp := []TopicPartition{{topic, 0}}
	c, err := NewConsumer(props)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Assign(tp); err != nil {
		t.Fatal(err)
	}
	var got int
	eventually(t, 20*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		recs, err := c.Poll(pctx)
		if err != nil {
			return err
		}
		got += len(recs)
		if got == 0 {
			return fmt.Errorf("nothing yet")
		}
		return nil
	})
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c2, err := NewConsumer(props)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close(ctx)
	if err := c2.Assign(tp); err != nil {
		t.Fatal(err)
	}
	pos, err := c2.Position(ctx, tp[0])
	if err != nil || pos != int64(got) {
		t.Fatalf("second consumer starts at %d (%v), want %d", pos, err, got)
	}
}

// TestIntegrationSeekRightAfterAssign: a consumer that seeks before it has
// the topic's metadata fetches once the metadata arrives, within the same
// Poll (it used to wait for the next Poll call).
func TestIntegrationSeekRightAfterAssign(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 1)
	per := produceN(t, topic, 20)
	c, err := NewConsumer(map[string]string{"bootstrap.servers": bootstrap(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer c.Close(ctx)
	tp := TopicPartition{topic, 0}
	if err := c.Assign([]TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	if err := c.Seek(tp, 5); err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	recs, err := c.Poll(pctx)
	if err != nil || len(recs) == 0 || recs[0].Offset != 5 || len(recs) != per[0]-5 {
		t.Fatalf("one Poll after Assign and Seek: %d records (first %v), %v; want offsets 5-%d", len(recs), recs, err, per[0]-1)
	}
}

// TestIntegrationConsumerFetchSessions: the consumer fetches in fetch
// sessions: after the first (full) request, requests are incremental; a
// caught-up consumer's requests name no partition; every record comes
// back once, in order.
func TestIntegrationConsumerFetchSessions(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 30)
	per := produceN(t, topic, 600)
	c, err := NewConsumer(map[string]string{"bootstrap.servers": bootstrap(t), "auto.offset.reset": "earliest", "fetch.max.wait.ms": "50"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer c.Close(ctx)
	var tps []TopicPartition
	for p := range int32(30) {
		tps = append(tps, TopicPartition{topic, p})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	next := map[int32]int64{}
	seen := 0
	poll := func() {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		recs, err := c.Poll(pctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Offset != next[r.Partition] {
				t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			seen++
		}
	}
	eventually(t, 30*time.Second, func() error {
		poll()
		if seen < 600 {
			return fmt.Errorf("seen %d of 600", seen)
		}
		return nil
	})
	for p, n := range per {
		if next[p] != int64(n) {
			t.Fatalf("partition %d: consumed up to %d, produced %d", p, next[p], n)
		}
	}
	// Caught up: once the partitions whose records were buffered are back
	// in the session, incremental requests that name nothing.
	settle := c.incrementalFetches.Load()
	eventually(t, 30*time.Second, func() error {
		poll()
		if n := c.incrementalFetches.Load() - settle; n < 3 {
			return fmt.Errorf("%d fetches since the last record", n)
		}
		return nil
	})
	named, inc := c.incrementalNamed.Load(), c.incrementalFetches.Load()
	eventually(t, 30*time.Second, func() error {
		poll()
		if n := c.incrementalFetches.Load() - inc; n < 10 {
			return fmt.Errorf("%d idle fetches so far", n)
		}
		return nil
	})
	if n := c.incrementalNamed.Load() - named; n != 0 {
		t.Fatalf("a caught-up consumer's incremental fetches named %d partitions", n)
	}
	if full := c.fullFetches.Load(); full > 2 {
		t.Fatalf("%d full fetches, %d incremental", full, c.incrementalFetches.Load())
	}
	if seen != 600 {
		t.Fatalf("consumed %d records, produced 600", seen)
	}
}
