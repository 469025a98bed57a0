package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/client"
	"weir/scenario/spec"
)

// RunConfig is how `weir scenario run` runs a resolved scenario file.
type RunConfig struct {
	// WeirBinary starts weir clusters (`weir serve` per node); the CLI
	// passes its own executable.
	WeirBinary string
	// ServeArgs are extra `weir serve` flags for every node.
	ServeArgs []string
	// PprofBasePort, when set, has a weir cluster's node N serve
	// /debug/pprof/ on PprofBasePort+N-1 (localcluster.Spec).
	PprofBasePort int
	// Dir holds the cluster's data and logs; Out the reports.
	Dir, Out string
	// JavaDir is the Java drivers' Maven project (default: scenario/java
	// above the working directory or the executable).
	JavaDir string
	Logger  *slog.Logger
	Stdout  io.Writer // console lines and the summary
}

// RunResult is one variant's outcome; its JSON is the machine-readable
// report.
type RunResult struct {
	Name        string       `json:"name"`
	Variant     string       `json:"variant"`
	Quick       bool         `json:"quick"`
	Seed        string       `json:"seed,omitempty"`
	Description string       `json:"description,omitempty"`
	Started     time.Time    `json:"started"`
	Bootstrap   string       `json:"bootstrap"`
	Topics      []TopicInfo  `json:"topics"`
	Ticks       []Tick       `json:"ticks"`
	Events      []Event      `json:"events"`
	Phases      []PhaseStats `json:"phases"`
	Producers   ProduceStats `json:"produce"`
	Consumers   ConsumeStats `json:"consume"`
	// BrokerBytes is every producer's outgoing bytes per broker over the
	// run, BrokerShare the fraction of the total each got.
	BrokerBytes map[int32]int64   `json:"broker_bytes"`
	BrokerShare map[int32]float64 `json:"broker_share"`
	Explore     *ExploreResult    `json:"explore,omitempty"`
	Spec        string            `json:"spec"` // the resolved file
	Errors      []string          `json:"errors,omitempty"`
}

// TopicInfo is a topic as the run created it.
type TopicInfo struct {
	Name       string    `json:"name"`
	Partitions int       `json:"partitions"`
	Replicas   [][]int32 `json:"replicas"`
}

// Tick is one sampling interval. Per-partition slices are indexed by
// partition, per topic; latencies are in milliseconds.
type Tick struct {
	T           float64                  `json:"t"` // seconds since the run started, at the interval's end
	Phase       string                   `json:"phase"`
	Produced    map[string][]int64       `json:"produced"` // acknowledged in the interval
	Consumed    map[string][]int64       `json:"consumed"` // delivered in the interval (redeliveries count)
	Backlog     map[string][]int64       `json:"backlog"`  // acknowledged and not yet consumed, at the end
	Sent        int64                    `json:"sent"`     // records handed to the clients since the start
	Acked       int64                    `json:"acked"`    // since the start
	Received    int64                    `json:"received"` // since the start
	ProduceMs   Percentiles              `json:"produce_ms"`
	E2EMs       Percentiles              `json:"e2e_ms"`
	BrokerBytes map[int32]int64          `json:"broker_bytes"` // sent to each broker in the interval
	Leaders     map[string][]int32       `json:"leaders,omitempty"`
	Extra       map[string]float64       `json:"extra,omitempty"`
	perTopic    map[string]topicInterval `json:"-"`
}

// Percentiles of one interval or phase, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

func percentiles(h *Histogram) Percentiles {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return Percentiles{Count: h.Count(), Mean: ms(h.Mean()), P50: ms(h.Quantile(0.5)), P95: ms(h.Quantile(0.95)),
		P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)), Max: ms(h.Max())}
}

// Event is a marker on the report's charts.
type Event struct {
	T    float64 `json:"t"`
	Kind string  `json:"kind"` // phase, fault, leader
	Text string  `json:"text"`
}

// PhaseStats sums up one phase.
type PhaseStats struct {
	Name      string      `json:"name"`
	Kind      string      `json:"kind"`
	Start     float64     `json:"start"`
	End       float64     `json:"end"`
	Acked     int64       `json:"acked"`
	Received  int64       `json:"received"`
	ProduceMs Percentiles `json:"produce_ms"`
	E2EMs     Percentiles `json:"e2e_ms"`
	// Drain phases: the peak consumption rate over one tick, the lowest
	// after the peak while backlog remained, and whether it was drained.
	PeakRate       float64 `json:"peak_rate,omitempty"`
	MinWhileBehind float64 `json:"min_rate_while_backlog,omitempty"`
	Drained        bool    `json:"drained,omitempty"`
	DrainSeconds   float64 `json:"drain_s,omitempty"`
}

// ProduceStats sums up the producers over the run, as
// ProducerPerformance's last line does.
type ProduceStats struct {
	Sent       int64       `json:"sent"`
	Acked      int64       `json:"acked"`
	Errors     int64       `json:"errors"`
	RecordsSec float64     `json:"records_per_s"`
	MBSec      float64     `json:"mb_per_s"`
	LatencyMs  Percentiles `json:"latency_ms"`
}

// ConsumeStats sums up the consumers over the run.
type ConsumeStats struct {
	Received int64       `json:"received"`
	E2EMs    Percentiles `json:"e2e_ms"`
}

// ExploreResult is what an explore phase found.
type ExploreResult struct {
	TargetP99Ms float64       `json:"target_p99_ms"`
	Best        float64       `json:"best_rate"` // records/s, 0 when even min_rate missed
	Steps       []ExploreStep `json:"steps"`
}

// ExploreStep is one rate tried.
type ExploreStep struct {
	Rate   float64 `json:"rate"`
	P99Ms  float64 `json:"p99_ms"`
	Passed bool    `json:"passed"`
}

// RunFile runs every variant of f (those quick.variants names, with quick),
// each on a fresh cluster, and writes each one's report. It returns the
// results in order; a variant that fails still reports what it measured.
func RunFile(ctx context.Context, f *spec.File, quick bool, cfg RunConfig) ([]*RunResult, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	var out []*RunResult
	var errs []error
	for _, v := range f.VariantNames(quick) {
		rf, err := f.Resolve(v, quick)
		if err != nil {
			return out, err
		}
		res, err := runOne(ctx, rf, cfg)
		if res != nil {
			out = append(out, res)
			if werr := writeRunReports(cfg.Out, res); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("variant %q: %w", v, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return out, errors.Join(errs...)
}

// runner is one variant's run.
type runner struct {
	f       *spec.File
	cfg     RunConfig
	out     io.Writer
	start   time.Time
	cluster runCluster
	adm     *client.Admin
	m       *meter
	sw      switches
	ws      workers
	res     *RunResult

	mu          sync.Mutex // guards res.Ticks, res.Events, phaseStart
	phaseStart  map[string]time.Time
	leaders     map[string][]int32
	lastBytes   map[int32]int64
	currentName atomic.Value // string: the phase running
}

func runOne(ctx context.Context, f *spec.File, cfg RunConfig) (*RunResult, error) {
	r := &runner{f: f, cfg: cfg, out: &lockedWriter{w: cfg.Stdout}, phaseStart: map[string]time.Time{}, leaders: map[string][]int32{}, lastBytes: map[int32]int64{}}
	r.currentName.Store("")
	specText, _ := yamlText(f)
	label := f.Name
	if f.Variant != "" {
		label += " / " + f.Variant
	}
	fmt.Fprintf(r.out, "== scenario %s%s\n", label, map[bool]string{true: " (quick)", false: ""}[f.Quicked])
	dir := cfg.Dir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "weir-scenario-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	dir = filepath.Join(dir, safeName(label))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	cl, err := startCluster(ctx, f, cfg, dir)
	if err != nil {
		return nil, err
	}
	r.cluster = cl
	defer cl.Close()
	r.res = &RunResult{Name: f.Name, Variant: f.Variant, Quick: f.Quicked, Seed: f.Seed, Description: f.Description,
		Bootstrap: cl.Bootstrap(), Spec: specText}
	fmt.Fprintf(r.out, "cluster: %s, %d broker(s) at %s\n", f.Cluster.Kind, f.Cluster.Brokers, cl.Bootstrap())
	r.adm, err = client.NewAdmin(map[string]string{"bootstrap.servers": cl.Bootstrap()}, client.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	defer r.adm.Close()
	if err := r.setup(ctx); err != nil {
		// The clients made before the failure are closed.
		_, stopErr := r.ws.stop(&r.sw)
		return r.res, errors.Join(err, stopErr)
	}
	err = r.runPhases(ctx)
	r.finish()
	if err != nil {
		r.res.Errors = append(r.res.Errors, err.Error())
	}
	return r.res, err
}

// setup creates the topics, sets the broker configs and the share
// groups' start offset, and creates the clients.
func (r *runner) setup(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := r.waitBrokers(sctx); err != nil {
		return err
	}
	parts := map[string]int{}
	for _, t := range r.f.Topics {
		ts := client.TopicSpec{Name: t.Name, Partitions: int32(t.Partitions), ReplicationFactor: int16(t.ReplicationFactor), Configs: t.Configs, Assignment: t.Assignment}
		if len(t.Assignment) > 0 {
			ts.Partitions, ts.ReplicationFactor = -1, -1
		}
		step := int32(0)
		if r.f.Cluster.Kind == spec.KindKafka {
			step = kafkaCreateStep
		}
		if err := createInSteps(sctx, r.adm, ts, step); err != nil {
			return err
		}
		parts[t.Name] = t.Partitions
	}
	for _, t := range r.f.Topics {
		info, err := r.waitLeaders(sctx, t.Name, t.Partitions)
		if err != nil {
			return err
		}
		r.res.Topics = append(r.res.Topics, info)
		shown := info.Replicas
		more := ""
		if len(shown) > 12 {
			shown, more = shown[:12], fmt.Sprintf(" and %d more", len(info.Replicas)-12)
		}
		fmt.Fprintf(r.out, "topic %s: %d partitions, replicas %v%s\n", info.Name, info.Partitions, shown, more)
	}
	if len(r.f.Cluster.BrokerConfigs) > 0 {
		if _, err := setBrokerConfigs(sctx, r.adm, r.f.Cluster.BrokerConfigs); err != nil {
			return err
		}
	}
	for _, c := range r.f.Consumers {
		if c.Type == spec.ConsumerShare {
			earliest := "earliest"
			if err := r.adm.AlterConfigs(sctx, groupResource, c.Group, client.AlterConfigOp{Name: "share.auto.offset.reset", Value: &earliest}); err != nil {
				return fmt.Errorf("share group %s: %w", c.Group, err)
			}
		}
	}
	r.m = newMeter(parts)
	instances := 0
	for _, p := range r.f.Producers {
		instances += p.Count
	}
	classpaths := map[string]string{}
	javaCP := func(version string) (string, error) {
		if cp, ok := classpaths[version]; ok {
			return cp, nil
		}
		dir, err := findJavaDir(r.cfg.JavaDir)
		if err != nil {
			return "", err
		}
		bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		cp, err := buildJavaVersion(bctx, dir, version)
		if err == nil {
			classpaths[version] = cp
		}
		return cp, err
	}
	for _, p := range r.f.Producers {
		if p.Client == spec.ClientJava {
			cp, err := javaCP(p.JavaVersion)
			if err != nil {
				return err
			}
			w, err := newJavaProducer(ctx, p, parts[p.Topic], float64(p.Count)/float64(instances), r.res.Bootstrap, cp, r.f.Sample.D(), r.m, &r.sw)
			if err != nil {
				return err
			}
			r.ws.producers = append(r.ws.producers, w)
			continue
		}
		for i := range p.Count {
			w, err := newProducerWorker(p, i, parts[p.Topic], r.res.Bootstrap, r.m, &r.sw, r.cfg.Logger)
			if err != nil {
				return fmt.Errorf("producer %s: %w", p.Name, err)
			}
			w.share = 1 / float64(instances)
			r.ws.producers = append(r.ws.producers, w)
		}
	}
	for _, c := range r.f.Consumers {
		if c.Client == spec.ClientJava {
			cp, err := javaCP(c.JavaVersion)
			if err != nil {
				return err
			}
			w, err := newJavaConsumer(ctx, c, parts[c.Topic], r.res.Bootstrap, cp, r.f.Sample.D(), r.m, &r.sw)
			if err != nil {
				return err
			}
			r.ws.consumers = append(r.ws.consumers, w)
			continue
		}
		for i := range c.Count {
			w, err := newConsumerWorker(c, i, r.res.Bootstrap, r.m, &r.sw, r.cfg.Logger)
			if err != nil {
				return fmt.Errorf("consumer %s: %w", c.Name, err)
			}
			r.ws.consumers = append(r.ws.consumers, w)
		}
	}
	return nil
}

func (r *runner) waitBrokers(ctx context.Context) error {
	want := r.f.Cluster.Brokers
	if r.f.Cluster.Kind == spec.KindExternal {
		want = 1
	}
	for {
		d, err := r.adm.DescribeCluster(ctx)
		if err == nil && len(d.Brokers) >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d brokers: %w (last: %v)", want, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kafkaCreateStep is how many partitions a topic is created or grown by
// at a time on Apache Kafka, whose controller refuses an operation of
// more than 10,000 records (POLICY_VIOLATION, "excessively large batch
// operation"): a partition is one record.
const kafkaCreateStep = 5000

// createInSteps creates ts; with step > 0 a topic of more partitions than
// step (and no explicit assignment) is created with step partitions and
// grown by step at a time.
func createInSteps(ctx context.Context, adm *client.Admin, ts client.TopicSpec, step int32) error {
	total := ts.Partitions
	if step <= 0 || total <= step || len(ts.Assignment) > 0 {
		return retryCreate(ctx, adm, ts)
	}
	ts.Partitions = step
	if err := retryCreate(ctx, adm, ts); err != nil {
		return err
	}
	for n := min(2*step, total); ; n = min(n+step, total) {
		if err := adm.CreatePartitions(ctx, ts.Name, n); err != nil && !errors.Is(err, kerr.InvalidPartitions) {
			return fmt.Errorf("create topic %s: growing to %d partitions: %w", ts.Name, n, err)
		}
		if n == total {
			return nil
		}
	}
}

func retryCreate(ctx context.Context, adm *client.Admin, ts client.TopicSpec) error {
	for {
		err := adm.CreateTopics(ctx, ts)
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		if !errors.Is(err, kerr.InvalidReplicationFactor) && !errors.Is(err, kerr.InvalidReplicaAssignment) && !errors.Is(err, kerr.BrokerNotAvailable) {
			return fmt.Errorf("create topic %s: %w", ts.Name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("create topic %s: %w", ts.Name, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitLeaders waits until every partition of topic has a leader.
func (r *runner) waitLeaders(ctx context.Context, topic string, partitions int) (TopicInfo, error) {
	for {
		ds, err := r.adm.DescribeTopics(ctx, topic)
		if err == nil && len(ds) == 1 && len(ds[0].Partitions) == partitions {
			info := TopicInfo{Name: topic, Partitions: partitions}
			ok := true
			lead := make([]int32, partitions)
			for _, p := range ds[0].Partitions {
				ok = ok && p.Err == nil && p.Leader >= 0
				info.Replicas = append(info.Replicas, p.Replicas)
				if int(p.Partition) < partitions {
					lead[p.Partition] = p.Leader
				}
			}
			if ok {
				r.leaders[topic] = lead
				return info, nil
			}
		}
		select {
		case <-ctx.Done():
			return TopicInfo{}, fmt.Errorf("topic %s: not every partition has a leader: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runPhases starts the workers, the sampler and the faults, and runs the
// phases in order.
func (r *runner) runPhases(ctx context.Context) error {
	r.start = time.Now()
	r.res.Started = r.start
	r.sw.budget.Store(-1)
	// Faults at 0 s into the run are the setting it runs under (a slow
	// broker from the first record): applied before any worker starts.
	var later []spec.Fault
	for _, ft := range r.f.Faults {
		if ft.Phase != "" || ft.At > 0 {
			later = append(later, ft)
			continue
		}
		desc := describeFault(ft)
		r.event("fault", desc)
		fmt.Fprintf(r.out, "fault at start: %s\n", desc)
		if err := r.applyFault(ctx, ft); err != nil {
			return fmt.Errorf("fault %s: %w", desc, err)
		}
	}
	r.ws.start(ctx)
	sctx, stopSampler := context.WithCancel(ctx)
	var bg sync.WaitGroup
	bg.Go(func() { r.sample(sctx) })
	faultErrs := make(chan error, len(later))
	bg.Go(func() { r.runFaults(sctx, later, faultErrs) })
	fmt.Fprintf(r.out, "%-12s %10s %10s %12s %12s %12s %9s\n", "time", "pub msg/s", "cons msg/s", "total sent", "total recv", "backlog", "p99 e2e")
	var err error
	for _, ph := range r.f.Phases {
		if err = r.runPhase(ctx, ph); err != nil {
			break
		}
	}
	r.sw.produce.Store(false)
	r.sw.consume.Store(false)
	warnings, stopErr := r.ws.stop(&r.sw)
	for _, w := range warnings {
		fmt.Fprintf(r.out, "warning: closing a consumer: %v\n", w)
	}
	stopSampler()
	bg.Wait()
	r.tick() // the last partial interval
	close(faultErrs)
	for fe := range faultErrs {
		err = errors.Join(err, fe)
	}
	return errors.Join(err, stopErr)
}

func (r *runner) elapsed() float64 { return time.Since(r.start).Seconds() }

func (r *runner) event(kind, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.res.Events = append(r.res.Events, Event{T: r.elapsed(), Kind: kind, Text: text})
}

// runPhase runs one phase to its end.
func (r *runner) runPhase(ctx context.Context, ph spec.Phase) error {
	r.mu.Lock()
	r.phaseStart[ph.Name] = time.Now()
	r.mu.Unlock()
	r.currentName.Store(ph.Name)
	r.m.setPhase(ph.Name)
	r.event("phase", ph.Name+" ("+ph.Kind+")")
	stats := PhaseStats{Name: ph.Name, Kind: ph.Kind, Start: r.elapsed()}
	ackedAt, recvAt := r.totals()
	r.sw.noProcessing.Store(ph.NoProcessing)
	var err error
	switch ph.Kind {
	case spec.PhaseBacklog:
		r.sw.consume.Store(false)
		r.sw.budget.Store(-1)
		if ph.Records > 0 {
			r.sw.budgetTotal.Store(ph.Records)
			r.sw.budget.Store(ph.Records)
			r.sw.budgetRound.Add(1)
		}
		r.sw.produce.Store(true)
		err = r.until(ctx, ph.Duration.D(), func() bool {
			return (ph.Records > 0 && r.sw.budget.Load() == 0 && r.ws.owed() == 0) || r.ws.producersDone()
		})
		// The budget stays spent until a phase that produces without one.
		r.sw.produce.Store(false)
		// The backlog is what was acknowledged: wait for the sends in
		// flight to be answered.
		r.until(ctx, time.Minute, func() bool { return r.inFlight() == 0 })
	case spec.PhaseDrain:
		r.sw.produce.Store(false)
		r.sw.consume.Store(true)
		// Drained: nothing in flight and everything acknowledged consumed.
		drained := func() bool { return r.inFlight() == 0 && r.m.backlog() == 0 }
		err = r.until(ctx, ph.Timeout.D(), drained)
		stats.Drained = drained()
		if err == nil && !stats.Drained {
			err = fmt.Errorf("phase %s: %d records left after the %v timeout", ph.Name, r.m.backlog(), ph.Timeout.D())
		}
	case spec.PhaseSteady:
		r.sw.budget.Store(-1)
		r.sw.produce.Store(true)
		r.sw.consume.Store(len(r.ws.consumers) > 0)
		err = r.until(ctx, ph.Duration.D(), r.ws.producersDone)
	case spec.PhaseExplore:
		err = r.explore(ctx, ph)
	}
	stats.End = r.elapsed()
	ackedEnd, recvEnd := r.totals()
	stats.Acked, stats.Received = ackedEnd-ackedAt, recvEnd-recvAt
	r.m.mu.Lock()
	if h := r.m.phaseProduce[ph.Name]; h != nil {
		stats.ProduceMs, stats.E2EMs = percentiles(h), percentiles(r.m.phaseE2E[ph.Name])
	}
	r.m.mu.Unlock()
	if ph.Kind == spec.PhaseDrain {
		r.drainStats(&stats)
		// A drain shorter than a tick: the phase's own average.
		if d := stats.End - stats.Start; stats.PeakRate == 0 && stats.Received > 0 && d > 0 {
			stats.PeakRate, stats.MinWhileBehind, stats.DrainSeconds = float64(stats.Received)/d, float64(stats.Received)/d, d
		}
	}
	r.res.Phases = append(r.res.Phases, stats)
	return err
}

// until polls done every 20 ms until it holds (nil) or d passes (nil
// too: a phase that ends by time ends well); d <= 0 waits for done
// alone, bounded by ctx.
func (r *runner) until(ctx context.Context, d time.Duration, done func() bool) error {
	var deadline <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !done() {
		if err := r.ws.failed(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return nil
		case <-tick.C:
		}
	}
	return nil
}

func (r *runner) totals() (acked, received int64) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	for _, tm := range r.m.topics {
		for p := range tm.ackedTotal {
			acked += tm.ackedTotal[p]
			received += tm.consTotal[p]
		}
	}
	return acked, received
}

// inFlight is the records sent and not yet answered.
func (r *runner) inFlight() int64 {
	a, _ := r.totals()
	return r.ws.sent() - a - r.errorsSoFar()
}

func (r *runner) errorsSoFar() int64 {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return r.m.sendErrors
}

// drainStats fills in a drain phase's figures from the run's ticks.
func (r *runner) drainStats(s *PhaseStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.PeakRate, s.MinWhileBehind, s.DrainSeconds = drainFigures(r.res.Ticks, s.Start, s.End, r.f.Sample.D().Seconds())
}

// drainFigures reads the ticks of a drain phase (from start to end,
// seconds): the peak consumption rate over a full tick, the lowest rate
// after the peak while records remained behind (the seed's collapse;
// the phase's last tick, usually partial, is left out) and the time from
// the phase's start to the end of the last tick that consumed anything.
func drainFigures(all []Tick, start, end, sample float64) (peak, minBehind, drain float64) {
	var ticks []Tick
	for _, t := range all {
		if t.T > start && t.T <= end+1e-9 {
			ticks = append(ticks, t)
		}
	}
	prev := start
	peakAt := -1
	rates := make([]float64, len(ticks))
	for i, t := range ticks {
		n := sumMap(t.Consumed)
		if d := t.T - prev; d > 0 {
			rates[i] = float64(n) / d
		}
		if full := t.T-prev >= 0.5*sample; full && rates[i] > peak {
			peak, peakAt = rates[i], i
		}
		if n > 0 {
			drain = t.T - start
		}
		prev = t.T
	}
	minBehind = peak
	for i := peakAt + 1; peakAt >= 0 && i < len(ticks)-1; i++ {
		if sumMap(ticks[i].Backlog) > 0 {
			minBehind = min(minBehind, rates[i])
		}
	}
	return peak, minBehind, drain
}

// tick takes one sampling interval: counts, latencies, the bytes each
// broker got, leaders; prints the console line.
func (r *runner) tick() {
	iv := r.m.take()
	phase, _ := r.currentName.Load().(string)
	t := Tick{T: r.elapsed(), Phase: phase, Produced: map[string][]int64{}, Consumed: map[string][]int64{}, Backlog: map[string][]int64{},
		Sent: r.ws.sent(), ProduceMs: percentiles(&iv.produceLat), E2EMs: percentiles(&iv.e2eLat), BrokerBytes: map[int32]int64{}}
	var pub, cons, backlog int64
	for name, ti := range iv.topics {
		t.Produced[name], t.Consumed[name], t.Backlog[name] = ti.acked, ti.consumed, ti.backlog
		pub += sum(ti.acked)
		cons += sum(ti.consumed)
		backlog += sum(ti.backlog)
		t.Acked += ti.ackedTotal
		t.Received += ti.consumedTotal
	}
	bytes := r.ws.brokerBytes()
	for n, b := range bytes {
		t.BrokerBytes[n] = b - r.lastBytes[n]
	}
	r.lastBytes = bytes
	r.mu.Lock()
	prev := 0.0
	if n := len(r.res.Ticks); n > 0 {
		prev = r.res.Ticks[n-1].T
	}
	t.Leaders = map[string][]int32{}
	for k, v := range r.leaders {
		t.Leaders[k] = slices.Clone(v)
	}
	r.res.Ticks = append(r.res.Ticks, t)
	r.mu.Unlock()
	d := t.T - prev
	if d <= 0 {
		return
	}
	fmt.Fprintf(r.out, "%-12s %10s %10s %12s %12s %12s %9s\n", time.Now().Format("15:04:05.000"),
		group(int64(float64(pub)/d)), group(int64(float64(cons)/d)), group(t.Acked), group(t.Received), group(backlog), fmtMs(t.E2EMs))
}

// sample ticks every sampling interval and reads the leaders, noting
// every leadership change as an event, until ctx ends.
func (r *runner) sample(ctx context.Context) {
	tk := time.NewTicker(r.f.Sample.D())
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		r.readLeaders(ctx)
		r.tick()
	}
}

func (r *runner) readLeaders(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, r.f.Sample.D())
	defer cancel()
	for _, t := range r.f.Topics {
		ds, err := r.adm.DescribeTopics(rctx, t.Name)
		if err != nil || len(ds) != 1 {
			continue
		}
		var moved []string
		r.mu.Lock()
		lead := r.leaders[t.Name]
		for _, p := range ds[0].Partitions {
			if int(p.Partition) >= len(lead) || p.Err != nil {
				continue
			}
			if old := lead[p.Partition]; old != p.Leader {
				moved = append(moved, fmt.Sprintf("%s-%d: leader %d -> %d", t.Name, p.Partition, old, p.Leader))
				lead[p.Partition] = p.Leader
			}
		}
		// Many moves in one reading (a broker stopping with thousands of
		// leaderships) make one event, not thousands of markers.
		text := strings.Join(moved, ", ")
		if len(moved) > maxMovesListed {
			text = fmt.Sprintf("%d leaderships of %s changed (%s, ...)", len(moved), t.Name, strings.Join(moved[:maxMovesListed], ", "))
		}
		if len(moved) > 0 {
			r.res.Events = append(r.res.Events, Event{T: r.elapsed(), Kind: "leader", Text: text})
		}
		r.mu.Unlock()
	}
}

// maxMovesListed is how many leadership changes of one reading an event
// names.
const maxMovesListed = 5

// finish sums up the run.
func (r *runner) finish() {
	res := r.res
	var total int64
	res.BrokerBytes = map[int32]int64{}
	for n, b := range r.lastBytes {
		res.BrokerBytes[n] = b
		total += b
	}
	res.BrokerShare = map[int32]float64{}
	for n, b := range res.BrokerBytes {
		if total > 0 {
			res.BrokerShare[n] = float64(b) / float64(total)
		}
	}
	if r.m == nil {
		return
	}
	var all, e2e Histogram
	r.m.mu.Lock()
	for _, h := range r.m.phaseProduce {
		all.Merge(h)
	}
	for _, h := range r.m.phaseE2E {
		e2e.Merge(h)
	}
	res.Producers.Errors = r.m.sendErrors
	r.m.mu.Unlock()
	acked, recv := r.totals()
	res.Producers.Sent, res.Producers.Acked, res.Producers.LatencyMs = r.ws.sent(), acked, percentiles(&all)
	// The rate is taken over the time records were being acknowledged,
	// from the start of the first tick with an acknowledgement to the end
	// of the last, as ProducerPerformance measures from its first send:
	// a JVM's start or an idle drain does not dilute it.
	r.mu.Lock()
	first, last, prev := -1.0, -1.0, 0.0
	for _, t := range res.Ticks {
		if sumMap(t.Produced) > 0 {
			if first < 0 {
				first = prev
			}
			last = t.T
		}
		prev = t.T
	}
	r.mu.Unlock()
	if span := last - first; first >= 0 && span > 0 {
		res.Producers.RecordsSec = float64(acked) / span
		if len(r.f.Producers) > 0 {
			res.Producers.MBSec = res.Producers.RecordsSec * float64(r.f.Producers[0].RecordSize) / (1 << 20)
		}
	}
	res.Consumers.Received, res.Consumers.E2EMs = recv, percentiles(&e2e)
	fmt.Fprintf(r.out, "%d records sent, %.1f records/sec (%.2f MB/sec), %.2f ms avg latency, %.0f ms max latency, %.0f ms 50th, %.0f ms 95th, %.0f ms 99th, %.0f ms 99.9th.\n",
		res.Producers.Acked, res.Producers.RecordsSec, res.Producers.MBSec, res.Producers.LatencyMs.Mean, res.Producers.LatencyMs.Max,
		res.Producers.LatencyMs.P50, res.Producers.LatencyMs.P95, res.Producers.LatencyMs.P99, res.Producers.LatencyMs.P999)
	for _, n := range slices.Sorted(maps.Keys(res.BrokerBytes)) {
		fmt.Fprintf(r.out, "outgoing-byte-total node-%d: %d (%.1f%%)\n", n, res.BrokerBytes[n], 100*res.BrokerShare[n])
	}
	if recv > 0 {
		fmt.Fprintf(r.out, "%d records consumed, end-to-end latency p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", recv, res.Consumers.E2EMs.P50, res.Consumers.E2EMs.P99, res.Consumers.E2EMs.Max)
	}
	for _, ph := range res.Phases {
		if ph.Kind == spec.PhaseDrain {
			fmt.Fprintf(r.out, "phase %s: drained %v in %.1f s, peak %.0f rec/s, lowest while behind %.0f rec/s (%.2f of the peak)\n",
				ph.Name, ph.Drained, ph.DrainSeconds, ph.PeakRate, ph.MinWhileBehind, ph.MinWhileBehind/math.Max(ph.PeakRate, 1))
		}
	}
	if res.Producers.Errors > 0 {
		fmt.Fprintf(r.out, "%d sends failed (last: %v)\n", res.Producers.Errors, r.m.lastErr)
	}
}

func fmtMs(p Percentiles) string {
	if p.Count == 0 {
		return "-"
	}
	return strconv.FormatFloat(p.P99, 'f', 0, 64) + " ms"
}

// group prints 1234567 as 1,234,567, as the seed's tool does.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func itoa(i int) string { return strconv.Itoa(i) }

func ptr[T any](v T) *T { return &v }

func loadRate(a *atomic.Uint64) float64 { return math.Float64frombits(a.Load()) }

// lockedWriter serialises the console lines that the phase loop, the
// sampler and the fault runner print.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// safeName makes a label a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
}
