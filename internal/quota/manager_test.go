package quota

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"weir/internal/metadata"
)

// TestManagerTranscripts runs testdata/manager: quotas set and removed,
// records, and the throttle times Kafka's quota managers compute for
// them. Each "run" directive's input is a list of commands:
//
//	config [samples=<n>] [window=<duration>]
//	set <entity> <key>=<value>        entity: user=a,client-id=<default>
//	remove <entity> <key>
//	record <produce|fetch> <user> <client-id> <value>   ("-" is the empty name)
//	request-time <user> <client-id> <duration>
//	unrecord <produce|fetch> <user> <client-id> <value>
//	max-fetch <user> <client-id>
//	sleep <duration>
//
// Rewrite the expected output with -rewrite and read the diff.
func TestManagerTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/manager", func(t *testing.T, path string) {
		m := NewManager(Config{})
		img := metadata.Empty()
		now := time.UnixMilli(1_700_000_000_000)
		start := now
		apply := func(r *metadata.ClientQuotaRecord) {
			next, _, err := img.Apply(img.Offset()+1, []metadata.Record{r})
			if err != nil {
				t.Fatal(err)
			}
			img = next
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "run" {
				t.Fatalf("unknown directive %q", d.Cmd)
			}
			var out strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				f := strings.Fields(line)
				if len(f) == 0 {
					continue
				}
				client := func(i int) Client {
					dash := func(s string) string {
						if s == "-" {
							return ""
						}
						return s
					}
					return Client{User: dash(f[i]), ClientID: dash(f[i+1])}
				}
				switch f[0] {
				case "config":
					cfg := Config{}
					for _, kv := range f[1:] {
						k, v, _ := strings.Cut(kv, "=")
						switch k {
						case "samples":
							cfg.Samples, _ = strconv.Atoi(v)
						case "window":
							cfg.Window = mustDuration(t, v)
						}
					}
					m = NewManager(cfg)
					continue
				case "set", "remove":
					e := parseEntity(t, f[1])
					r := &metadata.ClientQuotaRecord{Entity: e, Key: f[2], Remove: f[0] == "remove"}
					if !r.Remove {
						k, v, _ := strings.Cut(f[2], "=")
						r.Key = k
						r.Value, _ = strconv.ParseFloat(v, 64)
					}
					apply(r)
					continue
				case "sleep":
					now = now.Add(mustDuration(t, f[1]))
					continue
				case "record", "unrecord":
					k := Produce
					if f[1] == "fetch" {
						k = Fetch
					}
					c := client(2)
					v, _ := strconv.ParseFloat(f[4], 64)
					if f[0] == "unrecord" {
						m.Unrecord(img.ClientQuotas(), k, c, v, now)
						fmt.Fprintf(&out, "%s: ok\n", line)
						continue
					}
					throttle := m.Record(img.ClientQuotas(), k, c, v, now)
					fmt.Fprintf(&out, "%s: %s throttle=%s\n", line, limitString(m, img, k, c), throttle)
				case "request-time":
					c := client(1)
					throttle := m.RecordRequestTime(img.ClientQuotas(), c, mustDuration(t, f[3]), now)
					fmt.Fprintf(&out, "%s: %s throttle=%s\n", line, limitString(m, img, Request, c), throttle)
				case "max-fetch":
					fmt.Fprintf(&out, "%s: %d\n", line, m.MaxFetchBytes(img.ClientQuotas(), client(1)))
				default:
					t.Fatalf("unknown command %q", f[0])
				}
			}
			if out.Len() == 0 {
				return fmt.Sprintf("ok (t=%s)", now.Sub(start))
			}
			return out.String()
		})
	})
}

func limitString(m *Manager, img *metadata.Image, k Kind, c Client) string {
	if l, ok := m.Limit(img.ClientQuotas(), k, c); ok {
		return "limit=" + strconv.FormatFloat(l, 'f', -1, 64)
	}
	return "no limit"
}

func parseEntity(t *testing.T, s string) metadata.QuotaEntity {
	var parts []EntityPart
	for _, p := range strings.Split(s, ",") {
		typ, name, _ := strings.Cut(p, "=")
		ep := EntityPart{Type: typ}
		if name != "<default>" {
			ep.Name = &name
		}
		parts = append(parts, ep)
	}
	e, err := ParseEntity(parts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProducerHoldsQuota simulates a producer that sends requests back
// to back under a 1 MB/s producer_byte_rate and waits out every throttle
// time, as a muted connection makes it, and checks its rate over two
// minutes stays within 10% of the quota. Kafka's rate lets a new client
// send samples-1 windows of quota at once (the rate of a new sensor is
// taken over at least that long), and that burst echoes each time its
// sample leaves the window, so 30-second spans measure from about 0.75
// to 1.1 of the quota (logged) while the average holds.
func TestProducerHoldsQuota(t *testing.T) {
	for _, tt := range []struct {
		name    string
		request float64
		send    time.Duration // how long one request takes without a quota
	}{
		{"16 KiB requests", 16 << 10, time.Millisecond},
		{"1 MiB requests", 1 << 20, 5 * time.Millisecond},
		{"512 B requests", 512, 50 * time.Microsecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const quota = 1_000_000
			img, _, err := metadata.Empty().Apply(0, []metadata.Record{&metadata.ClientQuotaRecord{
				Entity: metadata.QuotaEntity{User: metadata.Named("p")}, Key: ProducerByteRate, Value: quota}})
			if err != nil {
				t.Fatal(err)
			}
			m := NewManager(Config{})
			start := time.UnixMilli(1_700_000_000_000)
			now, sent, throttled := start, 0.0, 0
			var at []float64 // bytes sent by each whole second
			for now.Sub(start) < 120*time.Second {
				for len(at) <= int(now.Sub(start)/time.Second) {
					at = append(at, sent)
				}
				sent += tt.request
				now = now.Add(tt.send)
				if d := m.Record(img.ClientQuotas(), Produce, Client{User: "p", ClientID: "c"}, tt.request, now); d > 0 {
					throttled++
					now = now.Add(d)
				}
			}
			got := sent / now.Sub(start).Seconds()
			if math.Abs(got-quota)/quota > 0.10 || throttled == 0 {
				t.Fatalf("%.0f bytes/s over %s (%d throttles), want within 10%% of %d", got, now.Sub(start), throttled, quota)
			}
			lo, hi := math.Inf(1), 0.0
			for s := 0; s+30 < len(at); s++ {
				r := (at[s+30] - at[s]) / 30
				lo, hi = min(lo, r), max(hi, r)
			}
			t.Logf("%.0f bytes/s over %s, %d throttles; 30 s spans from %.0f to %.0f bytes/s", got, now.Sub(start), throttled, lo, hi)
		})
	}
}

func TestParseConfig(t *testing.T) {
	get := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, err := ParseConfig(get(map[string]string{WindowNumConfig: "5", WindowSizeSecondsConfig: " 2"}))
	if err != nil || cfg.Samples != 5 || cfg.Window != 2*time.Second {
		t.Fatalf("%+v %v", cfg, err)
	}
	if cfg, err := ParseConfig(get(nil)); err != nil || cfg.Samples != 11 || cfg.Window != time.Second {
		t.Fatalf("defaults %+v %v", cfg, err)
	}
	for _, bad := range []string{"0", "-1", "x", "1.5"} {
		if _, err := ParseConfig(get(map[string]string{WindowNumConfig: bad})); err == nil {
			t.Errorf("%s=%s accepted", WindowNumConfig, bad)
		}
	}
}

// TestSensorsExpire: a client's rate is forgotten after an hour without
// records, so a client that comes back starts from nothing.
func TestSensorsExpire(t *testing.T) {
	img, _, _ := metadata.Empty().Apply(0, []metadata.Record{&metadata.ClientQuotaRecord{
		Entity: metadata.QuotaEntity{ClientID: metadata.DefaultName}, Key: ProducerByteRate, Value: 100}})
	m := NewManager(Config{})
	now := time.UnixMilli(1_700_000_000_000)
	m.Record(img.ClientQuotas(), Produce, Client{ClientID: "a"}, 1e6, now)
	m.Record(img.ClientQuotas(), Produce, Client{ClientID: "b"}, 1, now.Add(time.Hour+time.Minute))
	m.mu.Lock()
	n := len(m.sensors)
	m.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d sensors after an hour, want 1", n)
	}
}
