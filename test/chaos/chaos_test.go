package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"weir/internal/localcluster"
)

// settings is what a run does; the short form unless WEIR_CHAOS_LONG=1,
// each figure overridable (see doc.go).
type settings struct {
	killRounds, saslKillRounds, pauseRounds, netRounds int
	seed                                               uint64
}

func loadSettings(t *testing.T) settings {
	t.Helper()
	s := settings{killRounds: 8, saslKillRounds: 4, pauseRounds: 3, netRounds: 4, seed: uint64(time.Now().UnixNano())}
	if os.Getenv("WEIR_CHAOS_LONG") == "1" {
		s.killRounds, s.saslKillRounds, s.pauseRounds, s.netRounds = 50, 50, 12, 24
	}
	for _, v := range []struct {
		env string
		to  *int
	}{
		{"WEIR_CHAOS_KILL_ROUNDS", &s.killRounds}, {"WEIR_CHAOS_SASL_KILL_ROUNDS", &s.saslKillRounds},
		{"WEIR_CHAOS_PAUSE_ROUNDS", &s.pauseRounds}, {"WEIR_CHAOS_NET_ROUNDS", &s.netRounds},
	} {
		if e := os.Getenv(v.env); e != "" {
			n, err := strconv.Atoi(e)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: want a positive number", v.env, e)
			}
			*v.to = n
		}
	}
	if e := os.Getenv("WEIR_CHAOS_SEED"); e != "" {
		n, err := strconv.ParseUint(e, 10, 64)
		if err != nil {
			t.Fatalf("WEIR_CHAOS_SEED=%q: %v", e, err)
		}
		s.seed = n
	}
	return s
}

// fault is one round's injection.
type fault struct {
	at     time.Time
	node   int
	reason string  // what the node was: "leader of partition N" or "controller"
	led    []int32 // the partitions it led when the round began
	note   string  // what happened, for the log
}

// chaosRun is one loss test: producers, a live consumer, a fault loop, then
// the final read and the check.
type chaosRun struct {
	t       *testing.T
	c       *chaosCluster
	ledger  *Ledger
	rng     *rand.Rand
	faults  []fault
	loopErr error
	javaCP  string
	javaDir string
}

func newRun(t *testing.T, ctx context.Context, props map[string]string, seed uint64, lab *netLab, sec *saslSSL) *chaosRun {
	t.Logf("seed %d (WEIR_CHAOS_SEED=%d repeats the choice of victims)", seed, seed)
	r := &chaosRun{t: t, c: startCluster(t, ctx, props, lab, sec), ledger: NewLedger(), rng: rand.New(rand.NewPCG(seed, seed>>1|1))}
	cp, why := javaClasspath()
	if cp == "" {
		t.Logf("the Java producer does not run: %s; franz-go producers only", why)
		return r
	}
	r.javaCP, r.javaDir = cp, t.TempDir()
	buildJava(t, cp, r.javaDir)
	return r
}

// clients starts the producers and the live consumer; stop ends them
// (producers flush first) and returns their errors.
func (r *chaosRun) clients(ctx context.Context) (stop func() []error) {
	pctx, stopProducers := context.WithCancel(ctx)
	cctx, stopConsumer := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	goErr := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	var pwg sync.WaitGroup
	producer := func(f func() error) {
		pwg.Add(1)
		goErr(func() error { defer pwg.Done(); return f() })
	}
	// kgo0 runs with franz-go's defaults, so it refreshes metadata at
	// most every 5 s (MetadataMinAge); kgo1 may every 250 ms, which shows
	// how much of kgo0's stall is that client setting.
	producer(func() error { return kgoProducer(pctx, "kgo0", "kgo", r.c.clientOpts(), r.ledger, 2*time.Minute) })
	producer(func() error {
		return kgoProducer(pctx, "kgo1", "kgo-meta250ms", r.c.clientOpts(), r.ledger, 2*time.Minute, kgo.MetadataMinAge(250*time.Millisecond))
	})
	if r.javaCP != "" {
		// In the cluster's directory: kept with the node logs when the
		// test fails (keepLogs).
		logPath := filepath.Join(r.c.Dir, "java0.log")
		producer(func() error {
			return javaProducer(pctx, "java0", r.javaDir, r.javaCP, r.c.bootstrap(), r.c.javaProps(), r.ledger, logPath)
		})
	}
	goErr(func() error { return liveConsumer(cctx, r.c.clientOpts(), r.ledger) })
	return func() []error {
		stopProducers()
		pwg.Wait()
		stopConsumer()
		wg.Wait()
		return errs
	}
}

// victim picks a node to fault: the controller one time in four, else
// the leader of a random partition.
func (r *chaosRun) victim(ctx context.Context) (fault, error) {
	ls, err := r.c.layouts(ctx)
	if err != nil {
		return fault{}, err
	}
	var f fault
	if r.rng.IntN(4) == 0 {
		f.node, f.reason = r.c.controller(), "controller"
	}
	if f.node <= 0 {
		p := r.rng.IntN(partitions)
		f.node, f.reason = int(ls[p].leader), "leader of partition "+strconv.Itoa(p)
		if f.node <= 0 {
			return f, fmt.Errorf("partition %d has no leader", p)
		}
	}
	for p, l := range ls {
		if int(l.leader) == f.node {
			f.led = append(f.led, int32(p))
		}
	}
	return f, nil
}

// loop runs rounds of inject; a round error (a victim not found, a
// cluster that does not heal) ends the loop and fails the test after the
// check has run.
func (r *chaosRun) loop(ctx context.Context, rounds int, inject func(ctx context.Context, f *fault) error) {
	sleep(ctx, 2*time.Second) // traffic flows before the first fault
	for i := range rounds {
		f, err := r.victim(ctx)
		if err == nil {
			err = inject(ctx, &f)
		}
		if err != nil {
			r.loopErr = fmt.Errorf("round %d (node %d, %s): %w", i+1, f.node, f.reason, err)
			return
		}
		r.faults = append(r.faults, f)
		r.t.Logf("round %d: node %d (%s): %s", i+1, f.node, f.reason, f.note)
		sleep(ctx, time.Second+time.Duration(r.rng.IntN(1000))*time.Millisecond)
	}
}

// finish stops the clients, reads everything back once the cluster is
// healthy, checks and reports.
func (r *chaosRun) finish(ctx context.Context, name string, stop func() []error, loopEnd time.Time) {
	t := r.t
	for _, err := range stop() {
		t.Errorf("client: %v", err)
	}
	if _, err := r.c.recover(ctx, 60*time.Second); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	final, err := finalRead(ctx, r.c, 2*time.Minute)
	if err != nil {
		t.Errorf("%v", err)
	}
	acks, failed, seen := r.ledger.Snapshot()
	v := Check(acks, failed, seen, final)
	t.Logf("chaos %s: %d rounds; %d acknowledged, %d failed sends (%d of them in the log anyway), live consumer read %d, final read %d",
		name, len(r.faults), v.Acked, v.FailedSends, v.FailedPresent, v.Seen, v.Final)
	if reasons := r.ledger.FailureReasons(); len(reasons) > 0 {
		t.Logf("chaos %s: failed sends by producer and reason: %s", name, strings.Join(reasons, "; "))
	}
	for _, client := range []string{"kgo", "kgo-meta250ms", "java"} {
		n := 0
		for _, a := range acks {
			if a.Client == client {
				n++
			}
		}
		if n == 0 {
			// Every producer that ran must have reached the cluster (a
			// client that never connected, say with the wrong security
			// settings, would otherwise go unnoticed).
			if client != "java" || r.javaCP != "" {
				t.Errorf("producer family %s: no record acknowledged", client)
			}
			continue
		}
		times := make([]time.Time, len(r.faults))
		for i, f := range r.faults {
			times[i] = f.at
		}
		led := func(i int, p int32) bool { return slices.Contains(r.faults[i].led, p) }
		for _, k := range []struct {
			what    string
			include func(int, int32) bool
		}{
			{"any partition", nil},
			{"partitions the victim led", led},
			{"partitions it did not lead", func(i int, p int32) bool { return !led(i, p) }},
		} {
			st := Stalls(acks, client, partitions, times, loopEnd, k.include)
			var each []string
			for i, s := range st {
				if s.Partition < 0 {
					each = append(each, fmt.Sprintf("%d:-", i+1))
					continue
				}
				each = append(each, fmt.Sprintf("%d:%v(p%d+%v)", i+1, s.Gap.Round(time.Millisecond), s.Partition, s.After.Round(time.Millisecond)))
			}
			gaps := Gaps(st)
			t.Logf("chaos %s: %s ack stall, %s: median %v, max %v over %d rounds (%d acks); round:gap(partition+start after the fault): %s",
				name, client, k.what, Median(gaps).Round(time.Millisecond), Max(gaps).Round(time.Millisecond), len(gaps), n, strings.Join(each, " "))
		}
	}
	for _, s := range v.Violations {
		t.Errorf("%s", s)
	}
	if v.Acked == 0 {
		t.Errorf("no record was acknowledged: the run checked nothing")
	}
	if r.loopErr != nil {
		t.Errorf("fault loop: %v", r.loopErr)
	}
}

// TestKillLoop SIGKILLs the leader of a random partition (or the
// controller) every few seconds and restarts it after a short pause.
func TestKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for a minute; not in -short")
	}
	s := loadSettings(t)
	killLoop(t, "kill", s.killRounds, s.seed, nil)
}

// killLoop runs rounds of: SIGKILL a victim, restart it after 0.5-2 s,
// wait until every partition has its full ISR; then checks the ledger.
func killLoop(t *testing.T, name string, rounds int, seed uint64, sec *saslSSL) {
	ctx := testContext(t, time.Duration(rounds)*30*time.Second+5*time.Minute)
	r := newRun(t, ctx, nil, seed, nil, sec)
	stop := r.clients(ctx)
	r.loop(ctx, rounds, func(ctx context.Context, f *fault) error {
		f.at = time.Now()
		if err := localcluster.Kill(r.c.Dir, f.node); err != nil {
			return err
		}
		down := 500*time.Millisecond + time.Duration(r.rng.IntN(1500))*time.Millisecond
		sleep(ctx, down)
		if err := r.c.StartNode(ctx, f.node, 30*time.Second); err != nil {
			return err
		}
		back := time.Since(f.at)
		healed, err := r.c.recover(ctx, 60*time.Second)
		f.note = fmt.Sprintf("killed, down %v, answering after %v, full ISR %v later", down.Round(time.Millisecond), back.Round(time.Millisecond), healed.Round(time.Millisecond))
		return err
	})
	r.finish(ctx, name, stop, time.Now())
}

// TestPauseLoop freezes a broker with SIGSTOP for longer than
// replica.lag.time.max.ms, so its partners shrink the ISR without it,
// then resumes it (SIGCONT) and waits for the ISR to grow back.
func TestPauseLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes for a minute; not in -short")
	}
	s := loadSettings(t)
	const lag = 3 * time.Second
	const pause = 7 * time.Second
	ctx := testContext(t, time.Duration(s.pauseRounds)*(pause+40*time.Second)+5*time.Minute)
	r := newRun(t, ctx, map[string]string{"replica.lag.time.max.ms": strconv.Itoa(int(lag / time.Millisecond))}, s.seed, nil, nil)
	stop := r.clients(ctx)
	shrunk := 0
	r.loop(ctx, s.pauseRounds, func(ctx context.Context, f *fault) error {
		f.at = time.Now()
		if err := r.c.signal(f.node, syscall.SIGSTOP); err != nil {
			return err
		}
		// While it is frozen, watch the partitions it follows: their
		// leaders should drop it from the ISR.
		var out time.Duration
		for end := f.at.Add(pause); time.Now().Before(end) && ctx.Err() == nil; sleep(ctx, 200*time.Millisecond) {
			if out > 0 {
				continue
			}
			for n := 1; n <= nodes && out == 0; n++ {
				if n == f.node {
					continue
				}
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				ls, err := r.c.layoutsFrom(cctx, n)
				cancel()
				if err != nil {
					continue
				}
				for _, l := range ls {
					if int(l.leader) != f.node && !slices.Contains(l.isr, int32(f.node)) {
						out = time.Since(f.at)
						break
					}
				}
			}
		}
		if err := r.c.signal(f.node, syscall.SIGCONT); err != nil {
			return err
		}
		healed, err := r.c.recover(ctx, 60*time.Second)
		if out > 0 {
			shrunk++
			f.note = fmt.Sprintf("paused %v, out of an ISR after %v, full ISR %v after resuming", pause, out.Round(time.Millisecond), healed.Round(time.Millisecond))
		} else {
			f.note = fmt.Sprintf("paused %v, never seen out of an ISR, full ISR %v after resuming", pause, healed.Round(time.Millisecond))
		}
		return err
	})
	r.finish(ctx, "pause", stop, time.Now())
	t.Logf("chaos pause: the paused node left an ISR in %d of %d rounds", shrunk, len(r.faults))
	if len(r.faults) > 0 && shrunk == 0 {
		t.Errorf("in no round did a node frozen for %v (replica.lag.time.max.ms %v) leave the ISR of a partition it follows", pause, lag)
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
