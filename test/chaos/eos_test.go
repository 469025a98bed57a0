package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/localcluster"
)

// The exactly-once test: read-process-write copy loops (franz-go's
// GroupTransactSession: a read_committed group consumer and a
// transactional producer that commits its offsets inside each
// transaction) copy eos-in to eos-out while an idempotent producer keeps
// writing eos-in and a read_committed consumer reads eos-out; every round
// SIGKILLs the transaction coordinator of a copy loop or the leader of an
// input or output partition, restarting it after 0.5-2 s.
const (
	eosIn    = "eos-in"
	eosOut   = "eos-out"
	eosGroup = "eos-copy"
	eosLoops = 2
)

// eosRounds is the number of kill rounds: 5 (the short form), 30 with
// WEIR_CHAOS_LONG=1, or WEIR_CHAOS_EOS_ROUNDS.
func eosRounds(t *testing.T) int {
	n := 5
	if os.Getenv("WEIR_CHAOS_LONG") == "1" {
		n = 30
	}
	if e := os.Getenv("WEIR_CHAOS_EOS_ROUNDS"); e != "" {
		v, err := strconv.Atoi(e)
		if err != nil || v < 1 {
			t.Fatalf("WEIR_CHAOS_EOS_ROUNDS=%q: want a positive number", e)
		}
		n = v
	}
	return n
}

func TestExactlyOnceLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for a minute; not in -short")
	}
	s := loadSettings(t)
	rounds := eosRounds(t)
	ctx := testContext(t, time.Duration(rounds)*40*time.Second+6*time.Minute)
	r := newRun(t, ctx, map[string]string{
		// Transactions a killed coordinator or a dead client left open
		// are aborted within a second of their timeout.
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	}, s.seed, nil, nil)
	c := r.c
	for _, name := range []string{eosIn, eosOut} {
		eventually(t, ctx, 30*time.Second, "topic "+name+" created", func(ctx context.Context) error {
			mis := "2"
			res, err := c.adm.CreateTopic(ctx, partitions, nodes, map[string]*string{"min.insync.replicas": &mis}, name)
			if err == nil && res.Err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
				err = res.Err
			}
			return err
		})
	}
	seeds := c.bootstrap()

	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []error
	run := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				errMu.Unlock()
			}
		}()
	}
	inCtx, stopInput := context.WithCancel(ctx)
	copyCtx, stopCopy := context.WithCancel(ctx)
	liveCtx, stopLive := context.WithCancel(ctx)
	// The input producer is waited for on its own: the copy loops may
	// only be judged caught up once every input record is written.
	acked := newEOSAcked()
	inputDone := make(chan error, 1)
	go func() { inputDone <- eosInput(inCtx, seeds, acked) }()
	var commits, aborts, restarts atomic.Int64
	for i := range eosLoops {
		id := "eos-copy-" + strconv.Itoa(i)
		run(id, func() error { return eosCopy(copyCtx, t, seeds, id, &commits, &aborts, &restarts) })
	}
	var liveMu sync.Mutex
	var live []Rec
	run("live consumer", func() error {
		return eosLive(liveCtx, seeds, func(r Rec) { liveMu.Lock(); live = append(live, r); liveMu.Unlock() })
	})

	// Transactions flow before the first fault (the first one waits for
	// __transaction_state to be created and the group to form).
	if _, err := poll(ctx, 90*time.Second, func(context.Context) error {
		if commits.Load() < 3 {
			return fmt.Errorf("%d transactions committed", commits.Load())
		}
		return nil
	}); err != nil {
		t.Errorf("copy loops not committing before the faults: %v", err)
	}
	done := 0
	for i := range rounds {
		// Every third round the coordinator, the others a partition leader.
		node, why, err := eosVictim(ctx, c, i%3)
		if err == nil {
			at := time.Now()
			if err = localcluster.Kill(c.Dir, node); err == nil {
				down := 500*time.Millisecond + time.Duration(r.rng.IntN(1500))*time.Millisecond
				sleep(ctx, down)
				if err = c.StartNode(ctx, node, 30*time.Second); err == nil {
					var healed time.Duration
					healed, err = c.recover(ctx, 60*time.Second)
					t.Logf("round %d: node %d (%s) killed, down %v, healed %v after the kill; %d commits, %d aborts so far",
						i+1, node, why, down.Round(time.Millisecond), (time.Since(at) - down + healed).Round(time.Millisecond), commits.Load(), aborts.Load())
				}
			}
		}
		if err != nil {
			t.Errorf("round %d (node %d, %s): %v", i+1, node, why, err)
			break
		}
		done++
		sleep(ctx, time.Second+time.Duration(r.rng.IntN(1000))*time.Millisecond)
	}

	// Stop the input and wait for its flush: a batch for a partition
	// whose leader was just killed can sit in the client for seconds
	// (until its metadata names the new leader) and land after the copy
	// loops would otherwise have been found caught up and stopped, so
	// that nothing ever copied it.
	stopInput()
	if err := <-inputDone; err != nil {
		t.Errorf("input producer: %v", err)
	}
	if _, err := c.recover(ctx, 60*time.Second); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	// The copy loops catch up: the group's committed offsets reach the
	// input's end and pass every acknowledged input record.
	_, err := poll(ctx, 3*time.Minute, func(ctx context.Context) error { return eosCaughtUp(ctx, c, acked.ends()) })
	if err != nil {
		t.Errorf("copy loops did not catch up: %v", err)
	}
	stopCopy()
	// No transaction stays open: every output partition's last stable
	// offset reaches its high watermark.
	if _, err := poll(ctx, time.Minute, func(ctx context.Context) error { return eosStable(ctx, c) }); err != nil {
		t.Errorf("a last stable offset is stuck: %v", err)
	}
	sleep(ctx, time.Second) // the live consumer reads what the last commits made visible
	stopLive()
	wg.Wait()
	for _, err := range errs {
		t.Errorf("%v", err)
	}

	// The offsets the copy loops committed, once stopped (and stable: a
	// transaction a stopped loop left open is aborted at its timeout):
	// the input below them must have been copied once, none past them.
	var committed map[int32]int64
	if _, err := poll(ctx, time.Minute, func(ctx context.Context) (err error) {
		committed, err = eosCommitted(ctx, c)
		return err
	}); err != nil {
		t.Fatalf("fetching the offsets of group %s: %v", eosGroup, err)
	}
	input, err := eosRead(ctx, seeds, eosIn, kgo.ReadUncommitted())
	if err != nil {
		t.Fatalf("reading %s: %v", eosIn, err)
	}
	output, err := eosRead(ctx, seeds, eosOut, kgo.ReadCommitted())
	if err != nil {
		t.Fatalf("reading %s: %v", eosOut, err)
	}
	liveMu.Lock()
	v := CheckExactlyOnce(input, committed, output, live)
	liveMu.Unlock()
	t.Logf("chaos eos: %d rounds; %d input records (%d sends acknowledged), %d output records, %d read live; %d transactions committed, %d aborted, %d copy loop restarts",
		done, v.Inputs, acked.count(), v.Outputs, v.LiveSeen, commits.Load(), aborts.Load(), restarts.Load())
	for i, s := range v.Violations {
		if i == 20 {
			t.Errorf("... and %d more", len(v.Violations)-20)
			break
		}
		t.Errorf("%s", s)
	}
	if t.Failed() {
		eosLocate(ctx, t, seeds, v)
	}
	if v.Inputs == 0 || commits.Load() == 0 {
		t.Errorf("nothing was copied: the run checked nothing")
	}
}

// eosLocate says, for the first missing copies of a failed run, whether
// they are in the output topic at all: a read_uncommitted read finds
// each one's partition and offset (aborted, or left in an open
// transaction), or none (never written, or truncated).
func eosLocate(ctx context.Context, t *testing.T, seeds []string, v EOSVerdict) {
	var missing []string
	for _, s := range v.Violations {
		if rest, ok := strings.CutPrefix(s, "missing "); ok && len(missing) < 20 {
			value, _, _ := strings.Cut(rest, " ")
			missing = append(missing, value)
		}
	}
	if len(missing) == 0 {
		return
	}
	all, err := eosRead(ctx, seeds, eosOut, kgo.ReadUncommitted())
	if err != nil {
		t.Logf("reading %s read_uncommitted: %v", eosOut, err)
		return
	}
	at := make(map[string][]string)
	for _, r := range all {
		at[r.Value] = append(at[r.Value], fmt.Sprintf("%d@%d", r.Partition, r.Offset))
	}
	for _, m := range missing {
		t.Logf("missing %s: read_uncommitted finds it in %s at %v", m, eosOut, at[m])
	}
}

// eosVictim picks the node to kill: kind 0 the transaction coordinator of
// a copy loop, 1 the leader of an input partition, 2 of an output one.
func eosVictim(ctx context.Context, c *chaosCluster, kind int) (int, string, error) {
	if kind == 0 {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{"eos-copy-0"}
		resp, err := req.RequestWith(ctx, c.cl)
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			return int(resp.Coordinators[0].NodeID), "transaction coordinator of eos-copy-0", nil
		}
		kind = 1 // not known yet: a partition leader instead
	}
	name := eosIn
	if kind == 2 {
		name = eosOut
	}
	// Asked directly, not through kadm's metadata cache, which can name a
	// leader of up to 5 s ago (a node already killed and not yet leading).
	ls, err := topicLayouts(ctx, c.cl, name)
	if err != nil {
		return 0, "", err
	}
	for p, l := range ls {
		if l.leader > 0 {
			return int(l.leader), fmt.Sprintf("leader of %s-%d", name, p), nil
		}
	}
	return 0, "", fmt.Errorf("%s has no led partition", name)
}

// eosAcked is what the input producer had acknowledged: how many records,
// and each partition's end (the offset after its last acknowledged record).
type eosAcked struct {
	mu  sync.Mutex
	n   int64
	end map[int32]int64
}

func newEOSAcked() *eosAcked { return &eosAcked{end: make(map[int32]int64)} }

func (a *eosAcked) add(r *kgo.Record) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	a.end[r.Partition] = max(a.end[r.Partition], r.Offset+1)
}

func (a *eosAcked) count() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

func (a *eosAcked) ends() map[int32]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.end)
}

// eosInput writes unique values to eos-in with an idempotent producer
// until ctx ends, about 400 records a second, then flushes: when it
// returns, every send was acknowledged or failed.
func eosInput(ctx context.Context, seeds []string, acked *eosAcked) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(eosIn),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		return err
	}
	defer cl.Close()
	for seq := 0; ctx.Err() == nil; seq++ {
		cl.Produce(ctx, kgo.StringRecord("in-"+strconv.Itoa(seq)), func(r *kgo.Record, err error) {
			if err == nil {
				acked.add(r)
			}
		})
		if seq%40 == 39 {
			sleep(ctx, 100*time.Millisecond)
		}
	}
	fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return cl.Flush(fctx)
}

// eosCopy is one copy loop: each transaction writes what one poll
// returned to eos-out (the value unchanged) and commits the group's
// offsets with it. A session that fails for good is closed and made
// again with the same transactional id, which fences the old one.
func eosCopy(ctx context.Context, t *testing.T, seeds []string, id string, commits, aborts, restarts *atomic.Int64) error {
	for ctx.Err() == nil {
		err := eosSession(ctx, seeds, id, commits, aborts)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		restarts.Add(1)
		t.Logf("%s: session restarted: %v", id, err)
		sleep(ctx, time.Second)
	}
	return nil
}

func eosSession(ctx context.Context, seeds []string, id string, commits, aborts *atomic.Int64) error {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.ConsumerGroup(eosGroup),
		kgo.ConsumeTopics(eosIn),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(10 * time.Second),
		kgo.DefaultProduceTopic(eosOut),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
	}
	if f := os.Getenv("WEIR_CHAOS_EOS_KGO_LOG"); f != "" {
		w, err := os.OpenFile(f+"."+id, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			defer w.Close()
			opts = append(opts, kgo.WithLogger(kgo.BasicLogger(w, kgo.LogLevelInfo, func() string { return time.Now().Format("15:04:05.000 ") })))
		}
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		return err
	}
	defer sess.Close()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := sess.PollFetches(pctx)
		cancel()
		if fs.IsClientClosed() {
			return errors.New("client closed")
		}
		if fs.NumRecords() == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		// A record that fails (franz-go fails records it has not sent yet
		// on some errors) aborts the transaction: committing it would
		// commit the input offsets without their copies.
		e := kgo.AbortingFirstErrPromise(sess.Client())
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Value: r.Value}, e.Promise())
		})
		ectx, cancel := context.WithTimeout(context.Background(), time.Minute)
		committed, err := sess.End(ectx, kgo.TransactionEndTry(e.Err() == nil))
		cancel()
		if committed {
			commits.Add(1)
		} else {
			aborts.Add(1)
		}
		if err != nil {
			return fmt.Errorf("end: %w", err)
		}
	}
	return nil
}

// eosLive reads eos-out with read_committed while the faults go on.
func eosLive(ctx context.Context, seeds []string, seen func(Rec)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(eosOut),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			seen(Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
	}
	return nil
}

// eosCaughtUp is nil once the copy group's committed offsets reach the
// end of every input partition and pass every record acknowledged there
// (acked: each partition's end as the input producer saw it; a leader
// just elected may report a high watermark below it for a moment).
func eosCaughtUp(ctx context.Context, c *chaosCluster, acked map[int32]int64) error {
	ends, err := c.adm.ListEndOffsets(ctx, eosIn)
	if err != nil {
		return err
	}
	if err := ends.Error(); err != nil {
		return err
	}
	committed, err := eosCommitted(ctx, c)
	if err != nil {
		return err
	}
	var behind []string
	for p := range int32(partitions) {
		lo, ok := ends.Lookup(eosIn, p)
		if !ok {
			return fmt.Errorf("no end offset for %s-%d", eosIn, p)
		}
		end := max(lo.Offset, acked[p])
		if got, ok := committed[p]; !ok || got < end {
			behind = append(behind, fmt.Sprintf("%d: %d of %d", p, got, end))
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("group %s behind on %v", eosGroup, behind)
	}
	return nil
}

// eosCommitted is the copy group's committed offset of each input
// partition that has one.
func eosCommitted(ctx context.Context, c *chaosCluster) (map[int32]int64, error) {
	resp, err := c.adm.FetchOffsets(ctx, eosGroup)
	if err != nil {
		return nil, err
	}
	if err := resp.Error(); err != nil {
		return nil, err
	}
	out := make(map[int32]int64)
	for p, o := range resp[eosIn] {
		if o.At >= 0 {
			out[p] = o.At
		}
	}
	return out, nil
}

// eosStable is nil when every output partition's last stable offset is
// its high watermark: no transaction is open there.
func eosStable(ctx context.Context, c *chaosCluster) error {
	hw, err := c.adm.ListEndOffsets(ctx, eosOut)
	if err != nil {
		return err
	}
	lso, err := c.adm.ListCommittedOffsets(ctx, eosOut)
	if err != nil {
		return err
	}
	var stuck []string
	hw.Each(func(lo kadm.ListedOffset) {
		l, _ := lso.Lookup(eosOut, lo.Partition)
		if l.Err != nil || lo.Err != nil || l.Offset != lo.Offset {
			stuck = append(stuck, fmt.Sprintf("%d: LSO %d, HW %d", lo.Partition, l.Offset, lo.Offset))
		}
	})
	if len(stuck) > 0 {
		return fmt.Errorf("%v", stuck)
	}
	return nil
}

// eosRead reads every partition of a topic from its start to its end at
// an isolation level (the LSO for read_committed).
func eosRead(ctx context.Context, seeds []string, name string, iso kgo.IsolationLevel) ([]Rec, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(iso),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []Rec
	quiet := 0
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	// Markers and aborted records leave gaps no record shows: read until
	// three polls in a row find nothing.
	for quiet < 3 {
		pctx, pcancel := context.WithTimeout(rctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		if rctx.Err() != nil {
			return out, rctx.Err()
		}
		if fs.NumRecords() == 0 {
			quiet++
			continue
		}
		quiet = 0
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
	}
	return out, nil
}
