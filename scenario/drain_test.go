package scenario

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startBroker builds cmd/weir and runs `weir serve` on a free 127.0.0.1
// port (the public interface, as scenarios/share-case2 does), stopping it
// when the test ends. WEIR_TEST_BOOTSTRAP points the test at a broker
// already running instead.
func startBroker(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("WEIR_TEST_BOOTSTRAP"); addr != "" {
		return addr
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "weir")
	build := exec.Command("go", "build", "-o", bin, "./cmd/weir")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/weir: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &tailBuffer{max: 64 << 10}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	addr := make(chan string, 1)
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case a := <-addr:
		return a
	case <-exited:
		t.Fatalf("weir serve exited:\n%s", logs.Bytes())
	case <-time.After(30 * time.Second):
		t.Fatalf("weir serve printed no address in 30s:\n%s", logs.Bytes())
	}
	return ""
}

var listening = regexp.MustCompile(`weir listening on (127\.0\.0\.1:\d+)`)

// TestShareDrain runs the whole scenario on a small backlog with the
// in-process share consumer in both acquire modes, and with the Java one
// when java and mvn are installed, and checks that every record is
// delivered exactly once and the report files are written.
func TestShareDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	addr := startBroker(t)
	runs := [][2]string{{ClientWeir, "record_limit"}, {ClientWeir, "batch_optimized"}, {ClientJava, "record_limit"}}
	for _, run := range runs {
		client, mode := run[0], run[1]
		t.Run(client+"-"+mode, func(t *testing.T) {
			if client == ClientJava {
				if _, err := exec.LookPath("java"); err != nil {
					t.Skip("no java on PATH")
				}
				if _, err := exec.LookPath("mvn"); err != nil {
					t.Skip("no mvn on PATH")
				}
			}
			cfg := DefaultConfig()
			cfg.Bootstrap = addr
			cfg.Client = client
			cfg.AcquireMode = mode
			cfg.Records = 3000
			cfg.MaxPollRecords = 50
			cfg.Timeout = 60 * time.Second
			cfg.Out = t.TempDir()
			if client == ClientWeir && mode == "record_limit" {
				// Set for the run, deleted after it.
				cfg.BrokerConfigs = map[string]string{"weir.share.fetch.elsewhere.wait.ms": "-1"}
			}
			var out bytes.Buffer
			cfg.Stdout = &out
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			var loaded int64
			for _, n := range res.Backlog {
				loaded += n
			}
			if loaded != 3000 || res.Backlog[0] <= res.Backlog[11] {
				t.Errorf("backlog %v: want 3000 records, skewed to partition 0", res.Backlog)
			}
			if !res.Drained || res.Distinct != 3000 || res.Duplicates != 0 || res.Consumed != 3000 {
				t.Errorf("drained %v: %d delivered, %d distinct, %d duplicates; want 3000 exactly once", res.Drained, res.Consumed, res.Distinct, res.Duplicates)
			}
			if got := res.Series.Samples[len(res.Series.Samples)-1].Cumulative; got != 3000 {
				t.Errorf("series ends at %d records, want 3000", got)
			}
			if res.Summary.Total != 3000 || res.Summary.Peak <= 0 || res.Summary.Drain() <= 0 {
				t.Errorf("summary %+v", res.Summary)
			}
			samples, err := readCSVFile(res.CSV)
			if err != nil || len(samples) != len(res.Series.Samples) {
				t.Errorf("CSV %s: %d samples, %v; want %d", res.CSV, len(samples), err, len(res.Series.Samples))
			}
			page, err := os.ReadFile(res.HTML)
			if err != nil || !strings.Contains(string(page), "<svg") {
				t.Errorf("HTML %s: %v, has chart %v", res.HTML, err, strings.Contains(string(page), "<svg"))
			}
			if filepath.Base(res.CSV) != "share-drain-"+client+"-"+mode+".csv" {
				t.Errorf("CSV named %s", res.CSV)
			}
			if cfg.BrokerConfigs != nil && !strings.Contains(out.String(), "broker configs for this run (cluster defaults, read back): weir.share.fetch.elsewhere.wait.ms=-1") {
				t.Errorf("output does not show the broker config:\n%s", out.String())
			}
			if strings.Contains(out.String(), "could not delete") {
				t.Errorf("broker config not deleted:\n%s", out.String())
			}
			for _, want := range []string{"partition  0:", "leader 1", "peak rate:", "drain time:", "3000 distinct of 3000, 0 duplicates"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.Bootstrap = "127.0.0.1:9092"
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no bootstrap", func(c *Config) { c.Bootstrap = "" }},
		{"bad client", func(c *Config) { c.Client = "python" }},
		{"bad mode", func(c *Config) { c.AcquireMode = "fast" }},
		{"no records", func(c *Config) { c.Records = 0 }},
		{"no timeout", func(c *Config) { c.Timeout = 0 }},
	}
	for _, tc := range tests {
		c := ok
		tc.mod(&c)
		if err := c.validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	c := ok
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.Topic, "share-drain-weir-record_limit-") || c.Group != c.Topic || c.Name != "share-drain-weir-record_limit" {
		t.Errorf("defaults: topic %q group %q name %q", c.Topic, c.Group, c.Name)
	}
}
