package scenario

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"weir/scenario/spec"
)

var (
	weirOnce sync.Once
	weirDir  string
	weirPath string
	weirErr  error
)

// TestMain removes the weir binary built for the tests, if one was.
func TestMain(m *testing.M) {
	code := m.Run()
	if weirDir != "" {
		os.RemoveAll(weirDir)
	}
	os.Exit(code)
}

// weirBinary builds cmd/weir once per test binary.
func weirBinary(t *testing.T) string {
	t.Helper()
	weirOnce.Do(func() {
		dir, err := os.MkdirTemp("", "weir-scenario-bin-")
		if err != nil {
			weirErr = err
			return
		}
		weirDir = dir
		weirPath = filepath.Join(dir, "weir")
		out, err := exec.Command("go", "build", "-o", weirPath, "weir/cmd/weir").CombinedOutput()
		if err != nil {
			weirErr = err
			t.Logf("%s", out)
		}
	})
	if weirErr != nil {
		t.Fatalf("building weir: %v", weirErr)
	}
	return weirPath
}

// A scenario file end to end on a three-node weir cluster: a backlog
// loaded, drained by two record_limit share consumers, then producers
// and consumers together while a slow broker, a leadership move and a
// reassignment happen. Every record acknowledged is consumed, the phases
// end as written, the faults and the leadership changes they cause are
// in the events, and the reports are written (the HTML checked in the
// browser when there is one).
func TestRunFileOnACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node weir cluster")
	}
	const file = `
name: itest
cluster: {brokers: 3}
topics:
  - {name: t, assignment: [[1, 2], [2, 3], [3, 1]]}
producers:
  - {rate: 3000, record_size: 64, distributor: {type: PINNED_PARTITIONS}, configs: {linger.ms: "5"}}
consumers:
  - {type: share, acquire_mode: record_limit, count: 2}
faults:
  - {action: slow_broker, broker: 1, produce_delay_ms: 3}
  - {phase: load, at: 500ms, action: move_leaders}
  - {phase: load, at: 2s, action: reassign, assignment: {0: [3, 1]}}
phases:
  - {name: backlog, kind: backlog, records: 3000}
  - {name: empty, kind: drain, timeout: 60s}
  - {name: load, kind: steady, duration: 4s}
  - {name: rest, kind: drain, timeout: 60s}
sample: 250ms
`
	f, err := spec.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	var console strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	results, err := RunFile(ctx, f, false, RunConfig{WeirBinary: weirBinary(t), Dir: t.TempDir(), Out: out, Stdout: &console})
	t.Logf("console:\n%s", console.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d results", len(results))
	}
	res := results[0]
	if res.Producers.Acked != res.Producers.Sent || res.Producers.Errors != 0 || res.Producers.Sent < 3000+3000 {
		t.Errorf("produce: %+v", res.Producers)
	}
	if res.Consumers.Received < res.Producers.Acked {
		t.Errorf("consumed %d of %d acknowledged", res.Consumers.Received, res.Producers.Acked)
	}
	byName := map[string]PhaseStats{}
	for _, p := range res.Phases {
		byName[p.Name] = p
	}
	if b := byName["backlog"]; b.Acked != 3000 || b.Received != 0 {
		t.Errorf("backlog phase acknowledged %d and consumed %d, want 3000 and 0", b.Acked, b.Received)
	}
	if p := byName["empty"]; !p.Drained || p.PeakRate <= 0 || p.DrainSeconds <= 0 {
		t.Errorf("drain of the backlog: %+v", p)
	}
	if p := byName["rest"]; !p.Drained {
		t.Errorf("last drain: %+v", p)
	}
	if l := byName["load"]; l.End-l.Start < 3.9 || l.Acked < 6000 {
		t.Errorf("steady phase %+v, want 4 s at 3000/s", l)
	}
	events, moves := map[string]int{}, 0
	for _, e := range res.Events {
		events[e.Kind]++
		if e.Kind == "leader" {
			moves += strings.Count(e.Text, " -> ")
		}
	}
	// Every partition moved once, partition 0 once more (reassigned).
	if events["fault"] < 3 || moves < 4 || events["phase"] != 4 {
		t.Errorf("events %v (%d leadership moves), want the 3 faults, 4 moves and 4 phases:\n%+v", events, moves, res.Events)
	}
	if len(res.BrokerBytes) != 3 {
		t.Errorf("bytes per broker %v, want three brokers", res.BrokerBytes)
	}
	for _, want := range []string{"pub msg/s", "fault at start: broker 1 slow", "records sent", "outgoing-byte-total node-1"} {
		if !strings.Contains(console.String(), want) {
			t.Errorf("console lacks %q", want)
		}
	}
	stem := filepath.Join(out, ReportStem(res))
	var back RunResult
	if b, err := os.ReadFile(stem + ".json"); err != nil || json.Unmarshal(b, &back) != nil || len(back.Ticks) != len(res.Ticks) {
		t.Fatalf("JSON report: %v", err)
	}
	checkReportInBrowser(t, stem+".html", res, "cluster-run")
}
