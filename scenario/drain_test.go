package scenario

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/internal/broker"
	"weir/internal/server"
)

// startBroker runs a single weir broker in this process on a free
// 127.0.0.1 port and stops it when the test ends. WEIR_TEST_BOOTSTRAP
// points the test at a broker already running instead.
func startBroker(t *testing.T) string {
	t.Helper()
	if addr := os.Getenv("WEIR_TEST_BOOTSTRAP"); addr != "" {
		return addr
	}
	cfg := broker.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Group.NoInitialRebalanceDelay = true
	b, err := broker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Dispatcher: b})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	b.SetAdvertised(srv.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		srv.Shutdown(sctx)
		cancel()
		<-served
		if err := b.Close(); err != nil {
			t.Errorf("closing the broker: %v", err)
		}
	})
	return srv.Addr().String()
}

// TestShareDrainWeir runs the whole scenario with the in-process share
// consumer in both acquire modes on a small backlog and checks that every
// record is delivered exactly once and the report files are written.
func TestShareDrainWeir(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	addr := startBroker(t)
	for _, mode := range []string{"record_limit", "batch_optimized"} {
		t.Run(mode, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Bootstrap = addr
			cfg.Client = ClientWeir
			cfg.AcquireMode = mode
			cfg.Records = 3000
			cfg.MaxPollRecords = 50
			cfg.Timeout = 60 * time.Second
			cfg.Out = t.TempDir()
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
			if filepath.Base(res.CSV) != "share-drain-weir-"+mode+".csv" {
				t.Errorf("CSV named %s", res.CSV)
			}
			for _, want := range []string{"partition  0:", "peak rate:", "drain time:", "3000 distinct of 3000, 0 duplicates"} {
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
