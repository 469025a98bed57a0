package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/localcluster"
)

type options struct {
	target         string // weir or kafka
	kafkaScript    string
	kafkaHeap      string
	weir           string
	dir            string
	basePort       int
	perTopic       int
	topicsPerReq   int
	idle           time.Duration
	idleAfter      time.Duration // -1: the target's default
	profiles       string
	keep           bool
	metaAll        int
	metaOne        int
	shutdownWindow time.Duration
	exitWait       time.Duration
}

func main() {
	var o options
	scenarios := flag.String("scenarios", "200000x3,1000000x1", "comma-separated PARTITIONSxRF scenarios, run in order, each on a fresh cluster")
	flag.StringVar(&o.target, "target", "weir", "weir, or kafka: Apache Kafka 4.3 through -kafka-script (three KRaft brokers, node 1 also the controller)")
	flag.StringVar(&o.kafkaScript, "kafka-script", "scripts/apache-kafka", "scripts/apache-kafka, for -target kafka")
	flag.StringVar(&o.kafkaHeap, "kafka-heap", "4g", "each Kafka broker's heap, for -target kafka")
	flag.StringVar(&o.weir, "weir", "", "the weir binary (required with -target weir)")
	flag.StringVar(&o.dir, "dir", "", "directory for the clusters' data (required)")
	flag.IntVar(&o.basePort, "base-port", 27640, "first Kafka port; the cluster uses six consecutive ports")
	flag.IntVar(&o.perTopic, "partitions-per-topic", 50, "partitions per topic")
	flag.IntVar(&o.topicsPerReq, "topics-per-request", 100, "topics per CreateTopics request")
	flag.DurationVar(&o.idle, "idle", 10*time.Second, "how long idle CPU is measured")
	flag.DurationVar(&o.idleAfter, "idle-after", -1, "wait after the creation's memory figures before idle CPU is measured (default 0 for weir, 30s for kafka: its JVMs are still compiling and settling then)")
	flag.StringVar(&o.profiles, "profiles", "", "directory for CPU profiles (default: none taken)")
	flag.BoolVar(&o.keep, "keep", false, "keep each cluster's directory")
	flag.IntVar(&o.metaAll, "metadata-all", 5, "all-topics Metadata requests timed")
	flag.IntVar(&o.metaOne, "metadata-one", 21, "one-topic Metadata requests timed")
	flag.DurationVar(&o.shutdownWindow, "shutdown-profile", 0, "CPU profile length around the controlled shutdown (default: from the partition count)")
	flag.DurationVar(&o.exitWait, "exit-wait", 3*time.Minute, "how long a SIGTERMed broker may take to exit before it is killed and the scenario fails")
	flag.Parse()
	if (o.weir == "" && o.target == "weir") || o.dir == "" || (o.target != "weir" && o.target != "kafka") {
		fmt.Fprintln(os.Stderr, "usage: cluster-scale [-target weir|kafka] -weir BIN -dir DIR [flags]")
		os.Exit(2)
	}
	var list []scenario
	for _, s := range strings.Split(*scenarios, ",") {
		sc, err := parseScenario(strings.TrimSpace(s))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		list = append(list, sc)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rows []*row
	failed := false
	for _, sc := range list {
		r, err := run(ctx, o, sc)
		rows = append(rows, r)
		if err != nil {
			fmt.Printf("# scenario %s FAILED: %v\n", sc, err)
			failed = true
			if ctx.Err() != nil {
				break
			}
		}
	}
	printTable(os.Stdout, rows)
	if failed {
		os.Exit(1)
	}
}

type scenario struct {
	partitions int
	rf         int
}

func (s scenario) String() string { return fmt.Sprintf("p%d-rf%d", s.partitions, s.rf) }

func parseScenario(s string) (scenario, error) {
	p, r, ok := strings.Cut(s, "x")
	n, err1 := strconv.Atoi(p)
	rf, err2 := strconv.Atoi(r)
	if !ok || err1 != nil || err2 != nil || n < 1 || rf < 1 || rf > 3 {
		return scenario{}, fmt.Errorf("bad scenario %q: want PARTITIONSxRF, RF 1 to 3", s)
	}
	return scenario{n, rf}, nil
}

// row holds one scenario's figures for the table; NaN-free: zero means
// not measured.
type row struct {
	sc                 scenario
	startup            time.Duration
	create             time.Duration
	visible            time.Duration
	heapPerPart        float64
	heapPerHosted      float64 // per replica the node hosts (RF/3 of the partitions)
	rssPerPart         float64
	idleCPU            float64 // percent of one core, sum of the three nodes
	metaAll, metaOne   time.Duration
	metaAllParts       int
	victimLeads        int
	shutdownExit       time.Duration
	shutdownTook       time.Duration
	shutdownCommitted  time.Duration
	shutdownChanged    int
	restart            time.Duration
	failoverElect      time.Duration
	failoverActive     time.Duration
	failoverCreate     time.Duration
	failoverKilledRest time.Duration
	fds, threads       int
	goroutines         int // the most of any node after creation (weir)
	failed             string
	controllers        int
	failoverByCreate   bool
	shutdownStuck      bool
}

// bench is one scenario's cluster: weir's (c) or Apache Kafka's (k).
type bench struct {
	o    options
	sc   scenario
	name string
	c    *localcluster.Cluster
	k    *kafkaNodes
	dir  string
	r    *row
}

func (b *bench) m(metric string, v any, unit string) {
	fmt.Printf("M %s %s %v %s\n", b.name, metric, v, unit)
}

func run(ctx context.Context, o options, sc scenario) (r *row, err error) {
	defer func() {
		if err != nil {
			r.failed = err.Error()
		}
	}()
	r = &row{sc: sc}
	b := &bench{o: o, sc: sc, name: sc.String(), dir: filepath.Join(o.dir, sc.String()), r: r}
	os.RemoveAll(b.dir)
	fmt.Printf("# scenario %s: %d partitions (%d topics of %d), RF %d, %s, %s\n", b.name, sc.partitions,
		(sc.partitions+o.perTopic-1)/o.perTopic, o.perTopic, sc.rf, o.target, time.Now().UTC().Format(time.RFC3339))
	if o.target == "kafka" {
		return r, b.runKafka(ctx)
	}
	spec := localcluster.Spec{Nodes: 3, BasePort: o.basePort, Binary: o.weir,
		Args: []string{"--metrics-listen", "127.0.0.1:0", "--pprof-listen", "127.0.0.1:0", "--shutdown-timeout", "300s"}}
	start := time.Now()
	c, err := localcluster.Up(ctx, b.dir, spec, 2*time.Minute)
	if err != nil {
		return r, err
	}
	b.c = c
	r.startup = time.Since(start)
	b.m("startup", ms(r.startup), "ms")
	defer func() {
		b.churn()
		b.keepLogs()
		for n := 1; n <= 3; n++ {
			localcluster.Kill(b.dir, n)
		}
		c.StopAll(10 * time.Second)
		if !o.keep {
			os.RemoveAll(b.dir)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(spec.Bootstrap(), ",")...), kgo.RequestRetries(20))
	if err != nil {
		return r, err
	}
	defer cl.Close()
	if err := warm(ctx, cl); err != nil {
		return r, err
	}

	time.Sleep(2 * time.Second)
	before := b.memory("before")
	if err := b.create(ctx, cl); err != nil {
		return r, err
	}
	time.Sleep(3 * time.Second)
	after := b.memory("after")
	b.perPartition(before, after)

	b.settleIdle(0)
	r.idleCPU = b.idleCPU(ctx)
	b.scrape()
	if err := b.metadata(ctx, cl); err != nil {
		return r, err
	}
	if err := b.shutdown(ctx, cl); err != nil {
		return r, err
	}
	if err := b.failover(ctx, spec); err != nil {
		return r, err
	}
	return r, nil
}

// perPartition reports each node's heap and RSS growth per partition of
// the cluster and per replica it hosts (a node of three hosts RF/3 of
// the partitions), with the medians of the three in the row.
func (b *bench) perPartition(before, after [4]procMem) {
	var heaps, hosted, rsss []float64
	for n := 1; n <= 3; n++ {
		h := float64(after[n].heap-before[n].heap) / float64(b.sc.partitions)
		s := float64(after[n].rss-before[n].rss) / float64(b.sc.partitions)
		b.m(fmt.Sprintf("node%d.heap_per_partition", n), round1(h), "B")
		b.m(fmt.Sprintf("node%d.heap_per_hosted_replica", n), round1(h*3/float64(b.sc.rf)), "B")
		b.m(fmt.Sprintf("node%d.rss_per_partition", n), round1(s), "B")
		heaps, hosted, rsss = append(heaps, h), append(hosted, h*3/float64(b.sc.rf)), append(rsss, s)
		b.r.fds = max(b.r.fds, after[n].fds)
		b.r.threads = max(b.r.threads, after[n].threads)
		b.r.goroutines = max(b.r.goroutines, after[n].goroutines)
	}
	b.r.heapPerPart, b.r.heapPerHosted, b.r.rssPerPart = median(heaps), median(hosted), median(rsss)
}

// runKafka measures Apache Kafka the same way, as far as it can be:
// creation, memory (the JVM's used heap after a full collection, RSS),
// idle CPU, Metadata latency, and a controlled shutdown of broker 3
// (times from outside: leaderships gone from Metadata, process exit).
// With one controller there is no failover to time.
func (b *bench) runKafka(ctx context.Context) error {
	b.k = newKafkaNodes(b.o.kafkaScript, b.dir, b.o.basePort, b.o.kafkaHeap)
	start := time.Now()
	defer func() {
		b.k.stopAll()
		if !b.o.keep {
			os.RemoveAll(b.dir)
		}
	}()
	if err := b.k.up(ctx); err != nil {
		return err
	}
	b.r.startup = time.Since(start)
	b.m("startup", ms(b.r.startup), "ms")
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(b.k.bootstrap(), ",")...), kgo.RequestRetries(20))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := warm(ctx, cl); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	before := b.memory("before")
	if err := b.create(ctx, cl); err != nil {
		return err
	}
	time.Sleep(3 * time.Second)
	after := b.memory("after")
	b.perPartition(before, after)
	b.settleIdle(30 * time.Second)
	b.r.idleCPU = b.idleCPU(ctx)
	if err := b.metadata(ctx, cl); err != nil {
		return err
	}
	if err := b.shutdownKafka(ctx, cl); err != nil {
		return err
	}
	b.m("failover.skipped", strconv.Quote("one controller (node 1)"), "")
	return nil
}

// create makes the scenario's topics in requests of topicsPerReq and
// waits until every broker's metadata has the last one with leaders.
func (b *bench) create(ctx context.Context, cl *kgo.Client) error {
	adm := kadm.NewClient(cl)
	topics := (b.sc.partitions + b.o.perTopic - 1) / b.o.perTopic
	var waits []func()
	window := time.Duration(3+b.sc.partitions/25_000) * time.Second
	for n := 1; n <= 3; n++ {
		waits = append(waits, b.profile(ctx, n, "create", min(window, 60*time.Second)))
	}
	defer func() {
		for _, w := range waits {
			w()
		}
	}()
	ss := b.sched()
	start := time.Now()
	var last string
	exists := 0
	for i := 0; i < topics; i += b.o.topicsPerReq {
		var names []string
		for t := i; t < min(i+b.o.topicsPerReq, topics); t++ {
			names = append(names, fmt.Sprintf("t%07d", t))
		}
		last = names[len(names)-1]
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		resp, err := adm.CreateTopics(rctx, int32(b.o.perTopic), int16(b.sc.rf), nil, names...)
		cancel()
		if err != nil {
			return fmt.Errorf("create topics %s..: %w", names[0], err)
		}
		for _, t := range resp.Sorted() {
			switch {
			case errors.Is(t.Err, kerr.TopicAlreadyExists):
				// A retry of a request whose first try committed
				// (its answer lost to a change of controller).
				exists++
			case t.Err != nil:
				return fmt.Errorf("create topic %s: %w", t.Topic, t.Err)
			}
		}
	}
	b.r.create = time.Since(start)
	b.m("create.answered", ms(b.r.create), "ms")
	b.m("create.already_exists_on_retry", exists, "topics")
	b.m("create.rate", int(float64(b.sc.partitions)/b.r.create.Seconds()), "partitions/s")
	for n := int32(1); n <= 3; n++ {
		for {
			md, err := brokerMetadata(ctx, cl, n, last)
			if err == nil && len(md.Topics) == 1 && md.Topics[0].ErrorCode == 0 && len(md.Topics[0].Partitions) == b.o.perTopic && allLed(md.Topics[0]) {
				break
			}
			if ctx.Err() != nil || time.Since(start) > 10*time.Minute {
				return fmt.Errorf("broker %d does not show %s with leaders", n, last)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.r.visible = time.Since(start)
	b.m("create.visible_on_all", ms(b.r.visible), "ms")
	ss.report("create")
	return nil
}

// warm loads the client's view of the brokers, which Broker(id) needs.
func warm(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for range 100 {
		if _, err := req.RequestWith(ctx, cl); err != nil {
			return err
		}
		ok := true
		for n := range 3 {
			if _, err := cl.Broker(n+1).Request(ctx, kmsg.NewPtrApiVersionsRequest()); err != nil {
				ok = false
			}
		}
		if ok {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the client does not reach every broker")
}

func allLed(t kmsg.MetadataResponseTopic) bool {
	for _, p := range t.Partitions {
		if p.Leader < 0 {
			return false
		}
	}
	return true
}

func brokerMetadata(ctx context.Context, cl *kgo.Client, node int32, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl.Broker(int(node)))
	return resp, err
}

type procMem struct {
	heap, rss     int64
	fds, threads  int
	goroutines    int // -1 when unknown (Kafka)
	metricsHeapOK bool
}

// memory reads every node's live heap (after a forced collection) and
// process figures.
func (b *bench) memory(when string) [4]procMem {
	var out [4]procMem
	for n := 1; n <= 3; n++ {
		pid := b.pid(n)
		var pm procMem
		pprofURL, _ := b.endpoints(n)
		if pprofURL != "" {
			// The runtime's own figures, after a collection: /metrics
			// would do too, but it lists every partition and is slow
			// at this scale (see metrics.scrape).
			gc := "&gc=1"
			if b.o.profiles != "" && when == "after" {
				if prof, err := httpGet(pprofURL+"heap?gc=1", 2*time.Minute); err == nil {
					b.save(fmt.Sprintf("heap-node%d", n), prof)
					gc = ""
				}
			}
			if body, err := httpGet(pprofURL+"heap?debug=1"+gc, 2*time.Minute); err == nil {
				pm.heap, pm.metricsHeapOK = memStat(body, "HeapAlloc")
			}
			pm.goroutines = -1
			if body, err := httpGet(pprofURL+"goroutine?debug=1", 30*time.Second); err == nil {
				pm.goroutines = goroutineTotal(body)
			}
		}
		if b.k != nil {
			pm.heap, pm.metricsHeapOK = jvmHeap(pid)
		}
		pm.rss, pm.threads = procStatus(pid)
		pm.fds = countFDs(pid)
		out[n] = pm
		b.m(fmt.Sprintf("node%d.%s.heap", n, when), pm.heap, "B")
		b.m(fmt.Sprintf("node%d.%s.rss", n, when), pm.rss, "B")
		b.m(fmt.Sprintf("node%d.%s.fds", n, when), pm.fds, "")
		b.m(fmt.Sprintf("node%d.%s.threads", n, when), pm.threads, "")
		if pm.goroutines > 0 {
			b.m(fmt.Sprintf("node%d.%s.goroutines", n, when), pm.goroutines, "")
		}
	}
	return out
}

// goroutineTotal reads "goroutine profile: total N" from a goroutine
// profile in debug=1 text; -1 when absent.
func goroutineTotal(body []byte) int {
	line, _, _ := bytes.Cut(body, []byte("\n"))
	n, err := strconv.Atoi(string(bytes.TrimPrefix(line, []byte("goroutine profile: total "))))
	if err != nil {
		return -1
	}
	return n
}

// settleIdle waits -idle-after (def when not given) before idle CPU is
// measured.
func (b *bench) settleIdle(def time.Duration) {
	d := b.o.idleAfter
	if d < 0 {
		d = def
	}
	if d > 0 {
		b.m("idle.measured_after", ms(d), "ms")
		time.Sleep(d)
	}
}

// idleCPU is the CPU the three nodes use, together, while nothing is
// asked of them, in percent of one core.
func (b *bench) idleCPU(ctx context.Context) float64 {
	var before [4]int64
	for n := 1; n <= 3; n++ {
		before[n] = cpuTicks(b.pid(n))
	}
	// Every node: the one running the controller idles differently.
	var waits []func()
	for n := 1; n <= 3; n++ {
		waits = append(waits, b.profile(ctx, n, "idle", b.o.idle))
	}
	wait := func() {
		for _, w := range waits {
			w()
		}
	}
	ss := b.sched()
	start := time.Now()
	select {
	case <-time.After(b.o.idle):
	case <-ctx.Done():
	}
	secs := time.Since(start).Seconds()
	ss.report("idle")
	var total float64
	for n := 1; n <= 3; n++ {
		pct := float64(cpuTicks(b.pid(n))-before[n]) / 100 / secs * 100
		total += pct
		b.m(fmt.Sprintf("node%d.idle_cpu", n), round1(pct), "%")
	}
	wait()
	b.m("idle_cpu.total", round1(total), "%")
	return total
}

// metadata times Metadata requests from a client to broker 1.
func (b *bench) metadata(ctx context.Context, cl *kgo.Client) error {
	var all, one []time.Duration
	for range b.o.metaAll {
		start := time.Now()
		md, err := brokerMetadata(ctx, cl, 1)
		if err != nil {
			return fmt.Errorf("metadata (all topics): %w", err)
		}
		all = append(all, time.Since(start))
		parts := 0
		for _, t := range md.Topics {
			parts += len(t.Partitions)
		}
		b.r.metaAllParts = parts
	}
	for i := range b.o.metaOne {
		name := fmt.Sprintf("t%07d", i*7919%max(1, b.sc.partitions/b.o.perTopic))
		start := time.Now()
		if _, err := brokerMetadata(ctx, cl, 1, name); err != nil {
			return fmt.Errorf("metadata (one topic): %w", err)
		}
		one = append(one, time.Since(start))
	}
	b.r.metaAll, b.r.metaOne = medianDur(all), medianDur(one)
	b.m("metadata_all.partitions", b.r.metaAllParts, "")
	b.m("metadata_all.median", ms(b.r.metaAll), "ms")
	b.m("metadata_all.runs", fmtDurs(all), "ms")
	b.m("metadata_one.median", ms(b.r.metaOne), "ms")
	b.m("metadata_one.max", ms(slices.Max(one)), "ms")
	return nil
}

// leaders counts leaderships per broker and finds the controller.
func leaders(ctx context.Context, cl *kgo.Client, via int32) (map[int32]int, int32, error) {
	md, err := brokerMetadata(ctx, cl, via)
	if err != nil {
		return nil, 0, err
	}
	out := map[int32]int{}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			out[p.Leader]++
		}
	}
	return out, md.ControllerID, nil
}

// shutdown SIGTERMs a broker that does not run the controller and times
// it until the process exits; the controller's log says when the batch
// moving its leaderships committed.
func (b *bench) shutdown(ctx context.Context, cl *kgo.Client) error {
	led, ctl, err := leaders(ctx, cl, 1)
	if err != nil {
		return err
	}
	victim := int32(3)
	if ctl == 3 {
		victim = 2
	}
	b.r.victimLeads = led[victim]
	b.m("shutdown.controller_node", ctl, "")
	b.m("shutdown.victim_node", victim, "")
	b.m("shutdown.victim_leaderships", led[victim], "")
	marks := b.logMarks()
	window := b.o.shutdownWindow
	if window == 0 {
		window = time.Duration(3+b.sc.partitions/100_000) * time.Second
	}
	var waits []func()
	for n := 1; n <= 3; n++ {
		what := "shutdown"
		switch int32(n) {
		case ctl:
			what = "shutdown-controller"
		case victim:
			continue // its profile would end with the process
		}
		waits = append(waits, b.profile(ctx, n, what, window))
	}
	wait := func() {
		for _, w := range waits {
			w()
		}
	}
	pid := b.pid(int(victim))
	stopPerf := b.perf(pid, "shutdown-victim")
	defer stopPerf()
	time.Sleep(300 * time.Millisecond)
	ss := b.sched()
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	polls := 0
	for alive(pid) {
		if time.Since(start) > b.o.exitWait {
			b.m("shutdown.victim_stuck", "true", "")
			b.dumpGoroutines(int(victim))
			syscall.Kill(pid, syscall.SIGKILL)
			for alive(pid) {
				time.Sleep(10 * time.Millisecond)
			}
			b.logFacts(int(victim), marks)
			b.r.shutdownStuck = true
			fmt.Printf("# node %d did not exit within %v of SIGTERM; killed, the scenario goes on\n", victim, b.o.exitWait)
			break
		}
		if polls++; polls%10 == 0 {
			ss.take()
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.r.shutdownExit = time.Since(start)
	if b.r.shutdownStuck {
		b.r.shutdownExit = 0
	}
	ss.report("shutdown")
	stopPerf()
	wait()
	if !b.r.shutdownStuck {
		b.m("shutdown.sigterm_to_exit", ms(b.r.shutdownExit), "ms")
	}
	if line, _, ok := b.logFind(int(victim), marks, `msg="controlled shutdown" took=`); ok {
		if d, err := time.ParseDuration(field(line, "took")); err == nil {
			b.r.shutdownTook = d
			b.m("shutdown.broker_took", ms(d), "ms")
		}
		if e := field(line, "err"); e != "<nil>" {
			b.m("shutdown.broker_err", strconv.Quote(e), "")
		}
	}
	if line, t, ok := b.logFind(int(ctl), marks, `msg="broker shutting down"`); ok {
		b.r.shutdownChanged, _ = strconv.Atoi(field(line, "partitions_changed"))
		b.r.shutdownCommitted = t.Sub(start)
		b.m("shutdown.controller_batch_committed_at", ms(b.r.shutdownCommitted), "ms")
		b.m("shutdown.controller_partitions_changed", b.r.shutdownChanged, "")
	}
	if _, t, ok := b.logFind(int(ctl), marks, `reason="controlled shutdown complete"`); ok {
		b.m("shutdown.controller_fenced_at", ms(t.Sub(start)), "ms")
	}
	// Back up: it registers again and is unfenced; with RF 1 its
	// partitions, leaderless meanwhile, get it back as leader.
	start = time.Now()
	if err := b.c.StartNode(ctx, int(victim), 10*time.Minute); err != nil {
		return fmt.Errorf("restart node %d: %w", victim, err)
	}
	b.r.restart = time.Since(start)
	b.m("shutdown.restart_ready", ms(b.r.restart), "ms")
	return nil
}

// failover SIGKILLs the node running the controller and times a
// preferred election sent through the survivors until it succeeds.
func (b *bench) failover(ctx context.Context, spec localcluster.Spec) error {
	admin, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(spec.Bootstrap(), ",")...), kgo.RequestRetries(20))
	if err != nil {
		return err
	}
	defer admin.Close()
	if err := warm(ctx, admin); err != nil {
		return err
	}
	_, ctl, err := leaders(ctx, admin, 1)
	if err != nil {
		return err
	}
	var surv []int32
	for n := int32(1); n <= 3; n++ {
		if n != ctl {
			surv = append(surv, n)
		}
	}
	x, y := surv[0], surv[1]
	probe := "probe-" + b.name
	// The probe partition is led by x with y preferred: a preferred
	// election after the failover is a real leadership change.
	// Without the probe (the cluster too busy to settle it), the change
	// accepted is a CreateTopics instead.
	elect := true
	if err := probeTopic(ctx, admin, probe, x, y); err != nil {
		fmt.Printf("# failover probe not ready (%v): timing a CreateTopics instead\n", err)
		elect = false
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(spec.KafkaAddr(int(x)), spec.KafkaAddr(int(y))), kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := warm(ctx, cl); err != nil {
		return err
	}
	marks := b.logMarks()
	b.m("failover.killed_node", ctl, "")
	ss := b.sched()
	start := time.Now()
	if err := syscall.Kill(b.pid(int(ctl)), syscall.SIGKILL); err != nil {
		return err
	}
	attempts := 0
	var lastErr string
	for {
		attempts++
		var ok bool
		if elect {
			ok, lastErr = electProbe(ctx, cl.Broker(int(x)), probe)
		} else {
			ok, lastErr = createOne(ctx, cl.Broker(int(x)), "failover-"+b.name)
		}
		if ok {
			break
		}
		if time.Since(start) > 5*time.Minute || ctx.Err() != nil {
			return fmt.Errorf("no election accepted after the failover (%d attempts, last: %s)", attempts, lastErr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.r.failoverElect = time.Since(start)
	b.r.failoverByCreate = !elect
	if elect {
		b.m("failover.election_accepted", ms(b.r.failoverElect), "ms")
	} else {
		b.m("failover.create_topics_accepted", ms(b.r.failoverElect), "ms")
	}
	ss.report("failover")
	b.m("failover.election_attempts", attempts, "")
	if attempts > 1 {
		b.m("failover.last_refusal", strconv.Quote(lastErr), "")
	}
	cstart := time.Now()
	if ok, why := createOne(ctx, cl.Broker(int(y)), "after-"+b.name); !ok {
		return fmt.Errorf("create after failover through node %d: %s", y, why)
	}
	b.r.failoverCreate = time.Since(cstart)
	b.m("failover.next_create_topics", ms(b.r.failoverCreate), "ms")
	for _, n := range surv {
		if _, t, ok := b.logFind(int(n), marks, `msg="controller active"`); ok {
			b.r.failoverActive = t.Sub(start)
			b.m("failover.controller_active_at", ms(b.r.failoverActive), "ms")
			b.m("failover.new_controller_node", n, "")
		}
	}
	start = time.Now()
	if err := b.c.StartNode(ctx, int(ctl), 10*time.Minute); err != nil {
		return fmt.Errorf("restart node %d: %w", ctl, err)
	}
	b.r.failoverKilledRest = time.Since(start)
	b.m("failover.killed_restart_ready", ms(b.r.failoverKilledRest), "ms")
	return nil
}

// electProbe sends a preferred election of probe's partition 0 through
// broker; ok when it succeeded, else why not.
func electProbe(ctx context.Context, broker *kgo.Broker, probe string) (ok bool, why string) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 0 // preferred
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = probe, []int32{0}
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, broker)
	switch {
	case err != nil:
		return false, err.Error()
	case resp.ErrorCode != 0:
		return false, fmt.Sprintf("error code %d", resp.ErrorCode)
	case len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1:
		return false, "no partition in the answer"
	case resp.Topics[0].Partitions[0].ErrorCode != 0:
		return false, fmt.Sprintf("partition error code %d", resp.Topics[0].Partitions[0].ErrorCode)
	}
	return true, ""
}

// createOne creates a one-partition topic through broker; a retry that
// finds it (an earlier try committed) succeeds too.
func createOne(ctx context.Context, broker *kgo.Broker, topic string) (ok bool, why string) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 2000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, 1, 1
	req.Topics = append(req.Topics, t)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := req.RequestWith(rctx, broker)
	switch {
	case err != nil:
		return false, err.Error()
	case len(resp.Topics) != 1:
		return false, "no topic in the answer"
	case resp.Topics[0].ErrorCode != 0 && resp.Topics[0].ErrorCode != kerr.TopicAlreadyExists.Code:
		return false, fmt.Sprintf("error code %d", resp.Topics[0].ErrorCode)
	}
	return true, ""
}

// probeTopic creates topic with one partition on [x y], then reorders
// its replicas to [y x] and waits until x leads it with both in sync.
func probeTopic(ctx context.Context, cl *kgo.Client, topic string, x, y int32) error {
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Replicas = []int32{x, y}
	t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	ct.Topics = append(ct.Topics, t)
	if err := retry(ctx, func() error {
		resp, err := ct.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 {
			return fmt.Errorf("create %s: no topic in the answer", topic)
		}
		if c := resp.Topics[0].ErrorCode; c != 0 && c != kerr.TopicAlreadyExists.Code {
			return fmt.Errorf("create %s: error code %d", topic, c)
		}
		return nil
	}); err != nil {
		return err
	}
	ap := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	ap.TimeoutMillis = 30000
	at := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	at.Topic = topic
	p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	p.Replicas = []int32{y, x}
	at.Partitions = append(at.Partitions, p)
	ap.Topics = append(ap.Topics, at)
	if err := retry(ctx, func() error {
		aresp, err := ap.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if aresp.ErrorCode != 0 {
			return fmt.Errorf("reassign %s: error code %d", topic, aresp.ErrorCode)
		}
		if len(aresp.Topics) != 1 || len(aresp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("reassign %s: no partition in the answer", topic)
		}
		if c := aresp.Topics[0].Partitions[0].ErrorCode; c != 0 {
			return fmt.Errorf("reassign %s: error code %d", topic, c)
		}
		return nil
	}); err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		ok := true
		for _, n := range []int32{x, y} {
			md, err := brokerMetadata(ctx, cl, n, topic)
			if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
				ok = false
				continue
			}
			pt := md.Topics[0].Partitions[0]
			ok = ok && pt.Leader == x && slices.Equal(pt.Replicas, []int32{y, x}) && len(pt.ISR) == 2
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s: not led by %d with replicas [%d %d] in sync", topic, x, y, x)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retry calls f until it succeeds, for up to two minutes: requests time
// out while the cluster changes controllers.
func retry(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		fmt.Printf("# retrying: %v\n", err)
		time.Sleep(time.Second)
	}
}

// profile fetches a CPU profile of node n for d in the background into
// the profiles directory; the returned func waits for it.
func (b *bench) profile(ctx context.Context, n int, what string, d time.Duration) (wait func()) {
	pprofURL, _ := b.endpoints(n)
	if b.o.profiles == "" || pprofURL == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body, err := httpGet(fmt.Sprintf("%sprofile?seconds=%d", pprofURL, int(d.Seconds()+0.5)), d+time.Minute)
		if err != nil {
			fmt.Printf("# profile %s of node %d: %v\n", what, n, err)
			return
		}
		b.save(fmt.Sprintf("%s-node%d", what, n), body)
	}()
	return func() {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
}

// churn counts, over the scenario, the controllers that became active
// and the raft elections and step-downs in the nodes' logs.
func (b *bench) churn() {
	count := func(needle string) int {
		total := 0
		for n := 1; n <= 3; n++ {
			f, err := os.Open(b.logPath(n))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			for sc.Scan() {
				if strings.Contains(sc.Text(), needle) {
					total++
				}
			}
			f.Close()
		}
		return total
	}
	b.r.controllers = count(`msg="controller active"`)
	b.m("churn.controller_active", b.r.controllers, "")
	b.m("churn.raft_elections_started", count("heartbeat timeout reached, starting election"), "")
	b.m("churn.raft_leader_stepped_down", count("failed to contact quorum of nodes, stepping down"), "")
	b.m("churn.brokers_fenced_session", count(`reason="session timed out"`), "")
}

// keepLogs copies the nodes' logs, gzipped, next to the profiles.
func (b *bench) keepLogs() {
	if b.o.profiles == "" {
		return
	}
	for n := 1; n <= 3; n++ {
		path := filepath.Join(b.o.profiles, fmt.Sprintf("%s-node%d.log.gz", b.name, n))
		if err := gzipFile(b.logPath(n), path); err != nil {
			fmt.Printf("# log of node %d: %v\n", n, err)
			continue
		}
		fmt.Printf("# log kept: %s\n", path)
	}
}

func gzipFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(out)
	_, err = io.Copy(zw, in)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// dumpGoroutines saves node n's goroutines (debug=1) next to the profiles.
func (b *bench) dumpGoroutines(n int) {
	pprofURL, _ := b.endpoints(n)
	if pprofURL == "" || b.o.profiles == "" {
		return
	}
	body, err := httpGet(pprofURL+"goroutine?debug=1", 30*time.Second)
	if err != nil {
		fmt.Printf("# goroutines of node %d: %v\n", n, err)
		return
	}
	path := filepath.Join(b.o.profiles, fmt.Sprintf("%s-node%d-goroutines.txt", b.name, n))
	if os.WriteFile(path, body, 0o644) == nil {
		fmt.Printf("# goroutines of node %d: %s\n", n, path)
	}
}

// logFacts prints node n's log lines after its mark that are neither raft
// chatter nor per-partition lines, to show where a shutdown stopped.
func (b *bench) logFacts(n int, marks [4]int64) {
	f, err := os.Open(b.logPath(n))
	if err != nil {
		return
	}
	defer f.Close()
	f.Seek(marks[n], io.SeekStart)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "component=raft") && !strings.Contains(line, `msg="replica: became`) && !strings.Contains(line, "fetch failed") {
			fmt.Printf("# node%d: %s\n", n, line)
		}
	}
}

// perf records pid's stacks with perf(1), if there is one, until the
// process exits or the returned func is called (it waits for the file).
// The go runtime's own profiles end with the process; perf's do not.
func (b *bench) perf(pid int, what string) (stop func()) {
	bin, err := exec.LookPath("perf")
	if b.o.profiles == "" || err != nil {
		return func() {}
	}
	path := filepath.Join(b.o.profiles, fmt.Sprintf("%s-%s.perf", b.name, what))
	cmd := exec.Command(bin, "record", "-q", "-F", "499", "-g", "-p", strconv.Itoa(pid), "-o", path)
	if err := cmd.Start(); err != nil {
		fmt.Printf("# perf: %v\n", err)
		return func() {}
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				cmd.Process.Signal(os.Interrupt)
				<-done
			}
			fmt.Printf("# perf %s\n", path)
		})
	}
}

// save writes a profile into the profiles directory.
func (b *bench) save(what string, body []byte) {
	path := filepath.Join(b.o.profiles, b.name+"-"+what+".pprof")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		fmt.Printf("# profile %s: %v\n", path, err)
		return
	}
	fmt.Printf("# profile %s\n", path)
}

func (b *bench) pid(n int) int {
	if b.k != nil {
		return b.k.pid(n)
	}
	raw, err := os.ReadFile(filepath.Join(localcluster.NodeDir(b.dir, n), "pid"))
	if err != nil {
		return -1
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return pid
}

func (b *bench) logPath(n int) string {
	return filepath.Join(localcluster.NodeDir(b.dir, n), "weir.log")
}

// endpoints are node n's pprof and metrics URLs from its latest start.
func (b *bench) endpoints(n int) (pprofURL, metricsURL string) {
	f, err := os.Open(b.logPath(n))
	if err != nil {
		return "", ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "weir pprof on "); ok {
			pprofURL = u
		}
		if u, ok := strings.CutPrefix(line, "weir metrics on "); ok {
			metricsURL = u
		}
	}
	return pprofURL, metricsURL
}

func (b *bench) logMarks() [4]int64 {
	var marks [4]int64
	for n := 1; n <= 3; n++ {
		if st, err := os.Stat(b.logPath(n)); err == nil {
			marks[n] = st.Size()
		}
	}
	return marks
}

// logFind returns the first line of node n's log after its mark holding
// needle, with the line's time.
func (b *bench) logFind(n int, marks [4]int64, needle string) (string, time.Time, bool) {
	f, err := os.Open(b.logPath(n))
	if err != nil {
		return "", time.Time{}, false
	}
	defer f.Close()
	if _, err := f.Seek(marks[n], io.SeekStart); err != nil {
		return "", time.Time{}, false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, needle) {
			t, _ := time.Parse(time.RFC3339Nano, field(line, "time"))
			return line, t, true
		}
	}
	return "", time.Time{}, false
}

// field is key's value in a slog text line (quoted values unquoted).
func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 {
		if !strings.HasPrefix(line, key+"=") {
			return ""
		}
		i = -1
	}
	v := line[i+len(key)+2:]
	if strings.HasPrefix(v, `"`) {
		if s, err := strconv.QuotedPrefix(v); err == nil {
			u, _ := strconv.Unquote(s)
			return u
		}
	}
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}

func httpGet(url string, timeout time.Duration) ([]byte, error) {
	hc := http.Client{Timeout: timeout}
	resp, err := hc.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// memStat reads "# name = value" from a heap profile in debug=1 text.
func memStat(body []byte, name string) (int64, bool) {
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "# "+name+" = "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// scrape times one /metrics request to node 1.
func (b *bench) scrape() {
	_, metricsURL := b.endpoints(1)
	if metricsURL == "" {
		return
	}
	start := time.Now()
	body, err := httpGet(metricsURL, 5*time.Minute)
	if err != nil {
		b.m("metrics.scrape_error", strconv.Quote(err.Error()), "")
		return
	}
	b.m("metrics.scrape", ms(time.Since(start)), "ms")
	b.m("metrics.scrape_size", len(body), "B")
}

// procStatus reads VmRSS (bytes) and Threads from /proc/PID/status.
func procStatus(pid int) (rss int64, threads int) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			rss = kb << 10
		case "Threads:":
			threads, _ = strconv.Atoi(f[1])
		}
	}
	return rss, threads
}

func countFDs(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1
	}
	return len(ents)
}

// cpuTicks is utime+stime of pid in clock ticks (100 per second).
func cpuTicks(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// schedstat sums the CPU time and the time spent runnable but waiting
// for a CPU over pid's threads (/proc/PID/task/*/schedstat, ns).
func schedstat(pid int) (run, wait int64) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0
	}
	for _, t := range tasks {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			continue
		}
		f := strings.Fields(string(raw))
		if len(f) < 2 {
			continue
		}
		r, _ := strconv.ParseInt(f[0], 10, 64)
		w, _ := strconv.ParseInt(f[1], 10, 64)
		run += r
		wait += w
	}
	return run, wait
}

// sched follows the three nodes' CPU time and run-queue wait over a
// phase: the machine is shared, and a phase that waits for CPU more than
// it runs is bounded by the machine, not by weir. A node that exits
// keeps its last reading (take() refreshes them).
type sched struct {
	b           *bench
	pids        [4]int
	first, last [4][2]int64
}

func (b *bench) sched() *sched {
	s := &sched{b: b}
	for n := 1; n <= 3; n++ {
		s.pids[n] = b.pid(n)
		r, w := schedstat(s.pids[n])
		s.first[n] = [2]int64{r, w}
		s.last[n] = s.first[n]
	}
	return s
}

func (s *sched) take() {
	for n := 1; n <= 3; n++ {
		// A process that is exiting loses threads: keep the larger.
		if r, w := schedstat(s.pids[n]); r >= s.last[n][0] {
			s.last[n] = [2]int64{r, w}
		}
	}
}

func (s *sched) report(phase string) {
	s.take()
	var run, wait int64
	for n := 1; n <= 3; n++ {
		run += s.last[n][0] - s.first[n][0]
		wait += s.last[n][1] - s.first[n][1]
	}
	s.b.m(phase+".cpu_3_nodes", run/1e6, "ms")
	s.b.m(phase+".runqueue_wait_3_nodes", wait/1e6, "ms")
}

// alive: the process exists and is not a zombie (or is one with threads
// still exiting).
func alive(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(raw)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X') {
		// A zombie thread-group leader whose other threads are still
		// exiting (a JVM's main thread ends before the rest) is not
		// gone yet: scripts/apache-kafka counts it as running too.
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		return len(tasks) > 1
	}
	return true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianDur(v []time.Duration) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func fmtDurs(v []time.Duration) string {
	var parts []string
	for _, d := range v {
		parts = append(parts, strconv.FormatFloat(ms(d), 'f', 1, 64))
	}
	return strings.Join(parts, ",")
}

func secs(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

func printTable(w io.Writer, rows []*row) {
	fmt.Fprintln(w, "\n# Results (times in seconds unless marked; - = not measured)")
	fmt.Fprintln(w, "| partitions | RF | cluster up | create (answered) | visible on all | heap B/partition/node | heap B/hosted replica | RSS B/partition/node | idle CPU (3 nodes, % of a core) | Metadata all ms | Metadata one ms | victim leads | shutdown SIGTERM→exit | broker's controlled shutdown | controller batch at | partitions changed | victim restart | failover: election accepted | new controller active at | killed node restart | controllers activated | goroutines (most of a node) |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		exit, fail := secs(r.shutdownExit), secs(r.failoverElect)
		if r.shutdownStuck {
			exit = "stuck"
		}
		if r.failoverByCreate && r.failoverElect > 0 {
			fail += " (CreateTopics)"
		}
		gs := "-"
		if r.goroutines > 0 {
			gs = strconv.Itoa(r.goroutines)
		}
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %d | %s | %s | %s | %d | %s | %s | %s | %s | %d | %s |\n",
			r.sc.partitions, r.sc.rf, secs(r.startup), secs(r.create), secs(r.visible), r.heapPerPart, r.heapPerHosted, r.rssPerPart, r.idleCPU,
			ms(r.metaAll), ms(r.metaOne), r.victimLeads, exit, secs(r.shutdownTook), secs(r.shutdownCommitted),
			r.shutdownChanged, secs(r.restart), fail, secs(r.failoverActive), secs(r.failoverKilledRest), r.controllers, gs)
	}
	for _, r := range rows {
		if r.failed != "" {
			fmt.Fprintf(w, "# %s failed: %s\n", r.sc, r.failed)
		}
	}
	printTargets(w, rows)
}

// targets are the figures a cluster of three processes is held to
// (bench/cluster-scale/README.md): each with the row's value and whether
// it was met.
type target struct {
	name  string
	limit float64
	unit  string
	value func(*row) (float64, bool)
}

var targets = []target{
	{"idle CPU of the cluster", 10, "% of a core", func(r *row) (float64, bool) { return r.idleCPU, r.idleCPU > 0 }},
	{"heap per hosted replica, never written", 300, "B", func(r *row) (float64, bool) { return r.heapPerHosted, r.heapPerHosted != 0 }},
	{"controlled shutdown: leaderships committed", 1, "s", func(r *row) (float64, bool) { return r.shutdownCommitted.Seconds(), r.shutdownCommitted > 0 }},
	{"controlled shutdown: SIGTERM to exit", 5, "s", func(r *row) (float64, bool) { return r.shutdownExit.Seconds(), r.shutdownExit > 0 }},
	{"controller failover", 1, "s", func(r *row) (float64, bool) { return r.failoverElect.Seconds(), r.failoverElect > 0 }},
}

func printTargets(w io.Writer, rows []*row) {
	fmt.Fprintln(w, "\n# Targets")
	fmt.Fprintln(w, "| scenario | figure | target | measured | met |")
	fmt.Fprintln(w, "|---|---|---:|---:|---|")
	for _, r := range rows {
		for _, t := range targets {
			v, ok := t.value(r)
			got, met := "-", "not measured"
			if ok {
				got = strconv.FormatFloat(v, 'f', 2, 64)
				met = map[bool]string{true: "yes", false: "no"}[v < t.limit]
			}
			fmt.Fprintf(w, "| %s | %s | < %g %s | %s | %s |\n", r.sc, t.name, t.limit, t.unit, got, met)
		}
	}
}
