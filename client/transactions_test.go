package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// readAll reads partitions 0..n-1 of a topic from the start at an
// isolation level until a second passes without a record, and returns
// the values in partition then offset order.
func readAll(t *testing.T, topic string, n int32, isolation string) []string {
	t.Helper()
	c, err := NewConsumer(map[string]string{"bootstrap.servers": bootstrap(t), "isolation.level": isolation})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	defer c.Close(ctx)
	var tps []TopicPartition
	for p := range n {
		tps = append(tps, TopicPartition{Topic: topic, Partition: p})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	if err := c.SeekToBeginning(ctx, tps...); err != nil {
		t.Fatal(err)
	}
	got := map[int32][]string{}
	for quiet := 0; quiet < 2; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		recs, err := c.Poll(pctx)
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			quiet++
			continue
		}
		quiet = 0
		for _, r := range recs {
			got[r.Partition] = append(got[r.Partition], string(r.Value))
		}
	}
	var out []string
	for p := range n {
		out = append(out, got[p]...)
	}
	return out
}

func txnProducer(t *testing.T, id string, extra ...string) *Producer {
	t.Helper()
	props := map[string]string{"bootstrap.servers": bootstrap(t), "transactional.id": id, "linger.ms": "1"}
	for i := 0; i+1 < len(extra); i += 2 {
		props[extra[i]] = extra[i+1]
	}
	p, err := NewProducer(props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// TestIntegrationTransactions commits, aborts and commits again, under
// KIP-890's protocol and the classic one: read_committed readers see the
// committed records only, read_uncommitted ones every record.
func TestIntegrationTransactions(t *testing.T) {
	for _, classic := range []string{"false", "true"} {
		t.Run(map[string]string{"false": "v2", "true": "classic"}[classic], func(t *testing.T) {
			a := newTestAdmin(t)
			topic := uniqueTopic(t)
			createTopic(t, a, topic, 2)
			ctx := testCtx(t)
			p := txnProducer(t, topic+"-tid", "weir.transaction.classic", classic)
			if _, err := p.Send(ctx, &Record{Topic: topic, Value: []byte("early")}, nil).Get(ctx); !errors.Is(err, ErrTransactionState) {
				t.Fatalf("send before InitTransactions: %v, want ErrTransactionState", err)
			}
			if err := p.InitTransactions(ctx); err != nil {
				t.Fatal(err)
			}
			if got := p.txnVersion2Active(); got == (classic == "true") {
				t.Fatalf("transaction version 2 in use: %v with weir.transaction.classic=%s", got, classic)
			}
			run := func(prefix string, commit bool) {
				t.Helper()
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for i := range 4 {
					p.Send(ctx, &Record{Topic: topic, Partition: PartitionOf(int32(i % 2)), Value: fmt.Appendf(nil, "%s%d", prefix, i)}, nil)
				}
				end := p.AbortTransaction
				if commit {
					end = p.CommitTransaction
				}
				if err := end(ctx); err != nil {
					t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
				}
			}
			run("c", true)
			run("a", false)
			run("d", true)
			want := []string{"c0", "c2", "d0", "d2", "c1", "c3", "d1", "d3"}
			if got := readAll(t, topic, 2, "read_committed"); !slices.Equal(got, want) {
				t.Fatalf("read_committed read %v, want %v", got, want)
			}
			want = []string{"c0", "c2", "a0", "a2", "d0", "d2", "c1", "c3", "a1", "a3", "d1", "d3"}
			if got := readAll(t, topic, 2, "read_uncommitted"); !slices.Equal(got, want) {
				t.Fatalf("read_uncommitted read %v, want %v", got, want)
			}
		})
	}
}

// TestIntegrationTransactionOffsets copies a topic in transactions that
// commit the group's offsets; the first transaction aborts, so its
// offsets are not committed and its copies are invisible.
func TestIntegrationTransactionOffsets(t *testing.T) {
	for _, classic := range []string{"false", "true"} {
		t.Run(map[string]string{"false": "v2", "true": "classic"}[classic], func(t *testing.T) {
			a := newTestAdmin(t)
			in, out := uniqueTopic(t), uniqueTopic(t)
			createTopic(t, a, in, 1)
			createTopic(t, a, out, 1)
			ctx := testCtx(t)
			plain, err := NewProducer(map[string]string{"bootstrap.servers": bootstrap(t)})
			if err != nil {
				t.Fatal(err)
			}
			const n = 20
			for i := range n {
				plain.Send(ctx, &Record{Topic: in, Value: fmt.Appendf(nil, "r%02d", i)}, nil)
			}
			if err := plain.Close(ctx); err != nil {
				t.Fatal(err)
			}
			group := in + "-g"
			c, err := NewConsumer(map[string]string{"bootstrap.servers": bootstrap(t), "group.id": group,
				"auto.offset.reset": "earliest", "enable.auto.commit": "false", "isolation.level": "read_committed"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if err := c.Subscribe([]string{in}, nil); err != nil {
				t.Fatal(err)
			}
			p := txnProducer(t, in+"-tid", "weir.transaction.classic", classic)
			if err := p.InitTransactions(ctx); err != nil {
				t.Fatal(err)
			}
			tp := TopicPartition{Topic: in, Partition: 0}
			copied, aborted := 0, false
			for copied < n {
				recs, err := c.Poll(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) == 0 {
					continue
				}
				if err := p.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					p.Send(ctx, &Record{Topic: out, Value: r.Value}, nil)
				}
				next := recs[len(recs)-1].Offset + 1
				if err := p.SendOffsetsToTransaction(ctx, map[TopicPartition]int64{tp: next}, c.GroupMetadata()); err != nil {
					t.Fatal(err)
				}
				if !aborted {
					aborted = true
					if err := p.AbortTransaction(ctx); err != nil {
						t.Fatal(err)
					}
					if err := c.Seek(tp, recs[0].Offset); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := p.CommitTransaction(ctx); err != nil {
					t.Fatal(err)
				}
				copied += len(recs)
			}
			committed, err := c.Committed(ctx, []TopicPartition{tp})
			if err != nil || committed[tp] != n {
				t.Fatalf("committed %v (%v), want %d", committed, err, n)
			}
			got := readAll(t, out, 1, "read_committed")
			var want []string
			for i := range n {
				want = append(want, fmt.Sprintf("r%02d", i))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("output %v, want %v", got, want)
			}
		})
	}
}

// TestIntegrationTransactionFenced: a second producer with the same
// transactional.id fences the first, whose next commit fails with
// ErrProducerFenced; nothing of the zombie's transaction is visible.
func TestIntegrationTransactionFenced(t *testing.T) {
	a := newTestAdmin(t)
	topic := uniqueTopic(t)
	createTopic(t, a, topic, 1)
	ctx := testCtx(t)
	zombie := txnProducer(t, topic+"-tid")
	if err := zombie.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := txnProducer(t, topic+"-tid")
	if err := fresh.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	_, sendErr := zombie.Send(ctx, &Record{Topic: topic, Value: []byte("zombie")}, nil).Get(ctx)
	err := zombie.CommitTransaction(ctx)
	if !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie commit: %v (send: %v), want ErrProducerFenced", err, sendErr)
	}
	if err := zombie.BeginTransaction(); !errors.Is(err, ErrProducerFenced) {
		t.Fatalf("zombie begin after fencing: %v", err)
	}
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	fresh.Send(ctx, &Record{Topic: topic, Value: []byte("fresh")}, nil)
	if err := fresh.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, topic, 1, "read_committed"); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("read_committed read %v", got)
	}
}
