package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client"
	"weir/internal/console/svgcheck"
	"weir/internal/localcluster"
	"weir/internal/testport"
)

var weirBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-console-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weirBin = filepath.Join(dir, "weir")
	if out, err := exec.Command("go", "build", "-o", weirBin, "weir/cmd/weir").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building weir: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func startCluster(t *testing.T, ctx context.Context) (localcluster.Spec, string) {
	t.Helper()
	var lastErr error
	for range 3 {
		base := testport.Run(t, 10) // 3 Kafka, 3 raft, 3 metrics, the console
		spec := localcluster.Spec{Nodes: 3, BasePort: base, Binary: weirBin, Args: []string{"--shutdown-timeout", "5s"},
			MetricsBasePort: base + 6, Console: "127.0.0.1:" + strconv.Itoa(base+9)}
		c, err := localcluster.Up(ctx, t.TempDir(), spec, 30*time.Second)
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(func() {
			for _, n := range localcluster.Running(c.Dir, c.Spec) {
				localcluster.Kill(c.Dir, n)
			}
			c.StopAll(15 * time.Second)
		})
		return spec, "http://" + spec.Console
	}
	t.Fatalf("no cluster: %v", lastErr)
	return localcluster.Spec{}, ""
}

// traffic produces to partitions 0 and 1 of topic at fixed rates (p2
// gets nothing) until ctx ends, counting what was acknowledged.
type traffic struct {
	acked [3]atomic.Int64
	start time.Time
	wg    sync.WaitGroup
}

func startTraffic(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, rates [3]int) *traffic {
	tr := &traffic{start: time.Now()}
	for p, rate := range rates {
		if rate == 0 {
			continue
		}
		tr.wg.Add(1)
		go func() {
			defer tr.wg.Done()
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("record %d of p%d", i, p))},
					func(_ *kgo.Record, err error) {
						if err == nil {
							tr.acked[p].Add(1)
						}
					})
			}
		}()
	}
	return tr
}

func createAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, replicas [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, r := range replicas {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), r
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("creating %s: error %d", topic, code)
	}
}

// shot saves a screenshot of the page under test/console/screenshots.
func shot(ctx context.Context, t *testing.T, p *page, name string) {
	t.Helper()
	if err := p.screenshot(ctx, filepath.Join("screenshots", name+".png")); err != nil {
		t.Errorf("screenshot %s: %v", name, err)
	}
}

// visit opens a page, waits for a live update from its event stream,
// and checks it logged no error.
func visit(ctx context.Context, t *testing.T, p *page, url string) {
	t.Helper()
	if err := p.open(ctx, url); err != nil {
		t.Fatal(err)
	}
	p.waitFor(ctx, t, "a live update of "+url, `document.getElementById("live") === null || document.getElementById("live").dataset.updated`)
	if errs := p.errors(); len(errs) > 0 {
		t.Fatalf("%s logged errors:\n%s", url, strings.Join(errs, "\n"))
	}
}

func svgOf(ctx context.Context, t *testing.T, p *page, selector string) string {
	t.Helper()
	var s string
	if err := p.eval(ctx, fmt.Sprintf(`(document.querySelector(%q) || {outerHTML: ""}).outerHTML`, selector), &s); err != nil {
		t.Fatal(err)
	}
	if s == "" {
		t.Fatalf("no %s on the page", selector)
	}
	return s
}

func TestConsoleInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		if os.Getenv("WEIR_REQUIRE_BROWSER") == "1" {
			t.Fatal("chromium is not installed (scripts/test installs it: apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed; scripts/test installs it and runs this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	spec, consoleURL := startCluster(t, ctx)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(spec.Bootstrap(), ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// "traffic": a steady 200 records/s to p0, 50 to p1, none to p2.
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "traffic"); err != nil {
		t.Fatal(err)
	}
	tctx, stopTraffic := context.WithCancel(ctx)
	tr := startTraffic(tctx, t, cl, "traffic", [3]int{200, 50, 0})
	defer func() { stopTraffic(); tr.wg.Wait() }()

	// "skew": one replica per partition on brokers 1, 2, 3; 300, 100 and
	// 0 records; group "drain" committed at 100 and 50: a backlog of 200
	// and 50.
	createAssigned(ctx, t, cl, "skew", [][]int32{{1}, {2}, {3}})
	for p, n := range []int{300, 100} {
		for i := range n {
			cl.Produce(ctx, &kgo.Record{Topic: "skew", Partition: int32(p), Value: []byte(strings.Repeat("x", 100) + strconv.Itoa(i))}, nil)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var drain kadm.Offsets
	drain.AddOffset("skew", 0, 100, -1)
	drain.AddOffset("skew", 1, 50, -1)
	if err := adm.CommitAllOffsets(ctx, "drain", drain); err != nil {
		t.Fatal(err)
	}

	// A share group on "traffic": p2 gets nothing, so fetches from its
	// leader wait (the waits the group page shows per broker).
	sc, err := client.NewShareConsumer(map[string]string{"bootstrap.servers": spec.Bootstrap(), "group.id": "sharers"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Subscribe([]string{"traffic"}); err != nil {
		t.Fatal(err)
	}
	var shared atomic.Int64
	var scDone sync.WaitGroup
	scDone.Add(1)
	go func() {
		defer scDone.Done()
		for tctx.Err() == nil {
			recs, _ := sc.Poll(tctx)
			shared.Add(int64(len(recs)))
		}
	}()
	defer func() {
		stopTraffic()
		scDone.Wait()
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		sc.Close(cctx)
		cancel()
	}()

	b := startBrowser(t, bin)
	p := b.newPage(ctx, t)

	// Overview: three brokers with their rates, the topics, charts.
	visit(ctx, t, p, consoleURL+"/")
	p.waitFor(ctx, t, "every broker's rates", `document.querySelectorAll('#brokers td[data-rate="in"]').length === 3`)
	var brokers int
	p.eval(ctx, `document.querySelectorAll('#brokers tbody tr').length`, &brokers)
	if brokers != 3 {
		t.Fatalf("%d brokers listed", brokers)
	}
	p.waitFor(ctx, t, "the bytes chart to have points", `document.querySelector('svg.line-chart path.series[data-values*=" "]')`)
	if lines, err := svgcheck.LineChart(svgOf(ctx, t, p, "svg.line-chart")); err != nil || len(lines) != 6 {
		t.Fatalf("overview bytes chart: %d lines, %v", len(lines), err)
	}
	for _, topic := range []string{"traffic", "skew"} {
		var ok bool
		p.eval(ctx, fmt.Sprintf(`!!document.querySelector('#topics tr[data-topic=%q]')`, topic), &ok)
		if !ok {
			t.Errorf("overview does not list %s", topic)
		}
	}
	shot(ctx, t, p, "overview")

	// The traffic topic: per-partition produce rates drawn from what was
	// produced.
	visit(ctx, t, p, consoleURL+"/topic?name=traffic")
	p.waitFor(ctx, t, "five produce-rate points for p0",
		`(document.querySelector('svg.line-chart path.series[data-series="p0"]')?.dataset.values || "").trim().split(" ").length >= 5`)
	lines, err := svgcheck.LineChart(svgOf(ctx, t, p, "svg.line-chart"))
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(tr.start).Seconds()
	actual := [3]float64{float64(tr.acked[0].Load()) / elapsed, float64(tr.acked[1].Load()) / elapsed, 0}
	for _, l := range lines {
		part, _ := strconv.Atoi(strings.TrimPrefix(l.Name, "p"))
		m := median(l.Values[1:]) // the first interval may straddle the topic's creation
		switch {
		case part == 2 && m != 0:
			t.Errorf("p2 got no records but its line says %v", l.Values)
		case part < 2 && (m < 0.6*actual[part] || m > 1.4*actual[part]):
			t.Errorf("p%d: the chart's median %g records/s, the producer's average %g", part, m, actual[part])
		}
	}
	shot(ctx, t, p, "topic-traffic")

	// The skew topic: bytes per broker and backlog per partition as bars
	// of the sizes and lags the cluster reports.
	visit(ctx, t, p, consoleURL+"/topic?name=skew")
	dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"skew": {0: {}, 1: {}, 2: {}}})
	if err != nil {
		t.Fatal(err)
	}
	perBroker := map[string]float64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			perBroker["broker "+strconv.Itoa(int(d.Broker))] += float64(p.Size)
		})
	})
	bars, err := svgcheck.BarChart(svgOf(ctx, t, p, "svg.bar-chart"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != 3 {
		t.Fatalf("bytes per broker: %d bars", len(bars))
	}
	for _, br := range bars {
		if br.Value != perBroker[br.Label] {
			t.Errorf("%s: bar of %g bytes, DescribeLogDirs says %g", br.Label, br.Value, perBroker[br.Label])
		}
	}
	if !(bars[0].Width > bars[1].Width && bars[1].Width > bars[2].Width && bars[2].Width == 0) {
		t.Errorf("bytes per broker do not show the skew: %+v", bars)
	}
	backlog, err := svgcheck.BarChart(svgOf(ctx, t, p, `.backlog[data-group="drain"] svg`))
	if err != nil {
		t.Fatal(err)
	}
	if len(backlog) != 2 || backlog[0].Label != "p0" || backlog[0].Value != 200 || backlog[1].Value != 50 || backlog[0].Width != 4*backlog[1].Width {
		t.Errorf("backlog of drain: %+v, want p0 200 and p1 50", backlog)
	}
	// Browse the records of p1 from offset 98.
	p.eval(ctx, `(() => { const f = document.getElementById("browse"); f.partition.value = "1"; f.offset.value = "98"; f.requestSubmit(); })()`, nil)
	p.waitFor(ctx, t, "browsed records", `document.querySelectorAll('#record-table tbody tr').length === 2`)
	var firstOffset string
	p.eval(ctx, `document.querySelector('#record-table tbody tr').dataset.offset`, &firstOffset)
	if firstOffset != "98" {
		t.Errorf("browse from 98 starts at %s", firstOffset)
	}
	shot(ctx, t, p, "topic-skew")

	// Groups and one group's page.
	visit(ctx, t, p, consoleURL+"/groups")
	p.waitFor(ctx, t, "the drain group", `document.querySelector('#groups tr[data-group="drain"]')`)
	shot(ctx, t, p, "groups")
	visit(ctx, t, p, consoleURL+"/group?id=drain")
	p.waitFor(ctx, t, "lag of drain on skew-0", `document.querySelector('tr[data-tp="skew-0"] td[data-col="lag"]')?.textContent === "200"`)
	shot(ctx, t, p, "group-drain")

	// The share group: its members, share partitions with their state, and
	// ShareFetch waits per broker once two scrapes are in.
	visit(ctx, t, p, consoleURL+"/group?id=sharers")
	p.waitFor(ctx, t, "the share partitions", `document.querySelectorAll('#group-partitions tr[data-tp^="traffic-"]').length === 3`)
	p.waitFor(ctx, t, "ShareFetch waits measured", `document.querySelectorAll('#waits tr[data-broker] td.num').length >= 12`)
	if lines, err := svgcheck.LineChart(svgOf(ctx, t, p, "#waits + .charts svg.line-chart")); err != nil || len(lines) != 3 {
		t.Fatalf("the wait chart: %d lines, %v", len(lines), err)
	}
	if shared.Load() == 0 {
		t.Error("the share consumer received nothing")
	}
	shot(ctx, t, p, "group-share")

	// Operations: create a topic and reset drain's offsets from the page.
	visit(ctx, t, p, consoleURL+"/ops")
	shot(ctx, t, p, "operations")
	p.eval(ctx, `(() => { const f = document.getElementById("create-topic"); f.name.value = "made-in-browser"; f.partitions.value = "2"; f.requestSubmit(); })()`, nil)
	p.waitFor(ctx, t, "the topic created", `document.querySelector('#create-topic output')?.textContent.includes("✓ created topic made-in-browser")`)
	td, err := adm.ListTopics(ctx, "made-in-browser")
	if err != nil || td["made-in-browser"].Err != nil || len(td["made-in-browser"].Partitions) != 2 {
		t.Fatalf("the topic made in the browser: %+v %v", td, err)
	}
	p.eval(ctx, `(() => { const f = document.getElementById("reset-offsets"); f.group.value = "drain"; f.topic.value = "skew"; f.to.value = "earliest"; f.confirm.value = "drain"; f.requestSubmit(); })()`, nil)
	p.waitFor(ctx, t, "the offsets moved", `document.querySelector('#reset-offsets output')?.textContent.includes("✓ moved")`)
	fetched, err := adm.FetchOffsets(ctx, "drain")
	if err != nil {
		t.Fatal(err)
	}
	for part := range int32(3) {
		if o, ok := fetched.Lookup("skew", part); !ok || o.At != 0 {
			t.Errorf("drain's offset on skew-%d after the reset: %+v", part, o)
		}
	}
	if errs := p.errors(); len(errs) > 0 {
		t.Fatalf("operations logged errors:\n%s", strings.Join(errs, "\n"))
	}
	shot(ctx, t, p, "operations-done")
	// The overview and the group page show what the actions did.
	visit(ctx, t, p, consoleURL+"/")
	p.waitFor(ctx, t, "the new topic on the overview", `document.querySelector('#topics tr[data-topic="made-in-browser"]')`)
	visit(ctx, t, p, consoleURL+"/group?id=drain")
	p.waitFor(ctx, t, "drain's lag after the reset", `document.querySelector('tr[data-tp="skew-0"] td[data-col="lag"]')?.textContent === "300"`)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
