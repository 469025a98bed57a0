package console

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"weir/internal/broker"
	"weir/internal/server"
)

// startWeir runs one weir broker in process and returns its address and
// its metrics registry (as weir serve builds it).
func startWeir(t *testing.T) (string, *prometheus.Registry) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a broker")
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
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		b.Close()
	})
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(b.Collector(), srv.Collector())
	return srv.Addr().String(), reg
}

// TestKafkaClusterAgainstWeir drives every Cluster method against a real
// broker: what the console shows and does is what the broker answers.
func TestKafkaClusterAgainstWeir(t *testing.T) {
	addr, reg := startWeir(t)
	cl, closeCl, err := NewKafkaCluster(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeCl()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	info, err := cl.Describe(ctx)
	if err != nil || len(info.Brokers) != 1 || info.Brokers[0].ID != 1 || info.Controller != 1 {
		t.Fatalf("Describe: %+v %v", info, err)
	}
	// weir serves DescribeQuorum: the single node is the leader and the
	// only voter.
	if q, err := cl.Quorum(ctx); err != nil || q.Leader != 1 || len(q.Voters) != 1 || q.Voters[0].ID != 1 {
		t.Fatalf("Quorum: %+v %v", q, err)
	}
	if err := cl.CreateTopic(ctx, TopicSpec{Name: "web", Partitions: 2, ReplicationFactor: 1, Configs: map[string]string{"retention.ms": "3600000"}}); err != nil {
		t.Fatal(err)
	}
	ts, err := cl.Topics(ctx, "web")
	if err != nil || len(ts) != 1 || len(ts[0].Partitions) != 2 || ts[0].Partitions[1].Leader != 1 {
		t.Fatalf("Topics: %+v %v", ts, err)
	}
	for i, v := range []string{`{"n":0}`, "one", "two"} {
		p, off, err := cl.Produce(ctx, ProduceRecord{Topic: "web", Partition: 1, Key: []byte("k"), Value: []byte(v), Headers: []Header{{"h", []byte("x")}}})
		if err != nil || p != 1 || off != int64(i) {
			t.Fatalf("Produce %d: partition %d offset %d %v", i, p, off, err)
		}
	}
	recs, err := cl.Records(ctx, RecordQuery{Topic: "web", Partition: 1, Offset: 1, Limit: 10})
	if err != nil || len(recs) != 2 || recs[0].Offset != 1 || string(recs[1].Value) != "two" || recs[0].Headers[0].Key != "h" {
		t.Fatalf("Records: %+v %v", recs, err)
	}
	if recs, err := cl.Records(ctx, RecordQuery{Topic: "web", Partition: 1, Offset: 3, Limit: 10}); err != nil || len(recs) != 0 {
		t.Fatalf("Records past the end: %+v %v", recs, err)
	}
	ends, err := cl.Offsets(ctx, "web", OffsetLatest)
	if err != nil || ends[0] != 0 || ends[1] != 3 {
		t.Fatalf("Offsets: %v %v", ends, err)
	}
	sizes, err := cl.LogDirs(ctx, 1, []TP{{"web", 0}, {"web", 1}})
	if err != nil || sizes[TP{"web", 1}] <= 0 || sizes[TP{"web", 0}] != 0 {
		t.Fatalf("LogDirs: %v %v", sizes, err)
	}
	if err := cl.AlterConfig(ctx, "web", "retention.ms", ptrStr("7200000")); err != nil {
		t.Fatal(err)
	}
	cfgs, err := cl.Configs(ctx, "web")
	if err != nil || !hasConfig(cfgs, "retention.ms", "7200000", "DYNAMIC_TOPIC_CONFIG") {
		t.Fatalf("Configs: %v", err)
	}
	if err := cl.CommitOffsets(ctx, "readers", map[TP]int64{{"web", 1}: 2}); err != nil {
		t.Fatal(err)
	}
	co, err := cl.Committed(ctx, "readers")
	if err != nil || co[TP{"web", 1}] != 2 {
		t.Fatalf("Committed: %v %v", co, err)
	}
	gs, err := cl.Groups(ctx)
	if err != nil || len(gs) != 1 || gs[0].ID != "readers" || gs[0].Type != GroupClassic {
		t.Fatalf("Groups: %+v %v", gs, err)
	}
	if d, err := cl.DescribeGroup(ctx, gs[0]); err != nil || len(d.Members) != 0 {
		t.Fatalf("DescribeGroup: %+v %v", d, err)
	}
	if res, err := cl.ElectPreferred(ctx, []TP{{"web", 0}}); err != nil && !errors.Is(err, ErrNotServed) {
		t.Fatalf("ElectPreferred: %v %v", res, err)
	}
	if _, err := cl.Reassignments(ctx); err != nil && !errors.Is(err, ErrNotServed) {
		t.Fatalf("Reassignments: %v", err)
	}
	// The local broker's own counters, read in process.
	s, err := (&Scraper{Local: 1, Gatherer: reg}).Scrape(ctx, 1)
	if err != nil || s.BytesIn <= 0 || s.BytesOut <= 0 || s.Requests <= 0 {
		t.Fatalf("local scrape: %+v %v", s, err)
	}
	if _, err := (&Scraper{Local: 1, Gatherer: reg}).Scrape(ctx, 2); !errors.Is(err, ErrNoMetrics) {
		t.Fatalf("scrape of an unknown broker: %v", err)
	}
	if err := cl.DeleteTopic(ctx, "web"); err != nil {
		t.Fatal(err)
	}
}

func ptrStr(s string) *string { return &s }

func hasConfig(cfgs []TopicConfig, name, value, source string) bool {
	for _, c := range cfgs {
		if c.Name == name && c.Value != nil && *c.Value == value && c.Source == source {
			return true
		}
	}
	return false
}

// TestParseExposition: the text format read from other brokers.
func TestParseExposition(t *testing.T) {
	text := `# TYPE weir_server_bytes_in_total counter
weir_server_bytes_in_total 1234
weir_server_bytes_out_total 99
weir_server_requests_total{api="Produce"} 10
weir_server_requests_total{api="Fetch"} 5
weir_share_partition_in_flight_records{group="g",topic="t",partition="3"} 7
weir_share_partition_redeliveries_total{group="g",topic="t",partition="3"} 2
weir_share_partition_acquired_records{group="g",topic="t",partition="x"} 9
weir_share_fetch_parked_seconds_total 1.5
`
	s, err := parseExposition(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	ss := s.Shares[ShareKey{"g", TP{"t", 3}}]
	if s.BytesIn != 1234 || s.BytesOut != 99 || s.Requests != 15 || ss.InFlight != 7 || ss.Redeliveries != 2 || s.ParkedSeconds != 1.5 || len(s.Shares) != 1 {
		t.Fatalf("%+v", s)
	}
	if _, err := parseExposition(strings.NewReader("weir_server_bytes_in_total{ 12\n")); err == nil {
		t.Fatal("a malformed exposition parsed")
	}
}

// FuzzParseExposition: whatever another broker's endpoint answers, the
// console reads a sample or an error, never a panic.
func FuzzParseExposition(f *testing.F) {
	f.Add("weir_server_bytes_in_total 1\nweir_share_partition_in_flight_records{group=\"g\",topic=\"t\",partition=\"0\"} 3\n")
	f.Add("weir_share_partition_acquired_records{group=\"g\",topic=\"t\",partition=\"-1\"} NaN\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := parseExposition(strings.NewReader(text))
		if err != nil {
			return
		}
		for k := range s.Shares {
			if k.Partition < 0 {
				t.Fatalf("share partition %d read", k.Partition)
			}
		}
	})
}
