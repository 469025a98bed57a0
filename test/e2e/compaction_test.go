package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSIGKILLDuringCompaction kills weir serve with SIGKILL while its log
// cleaner compacts a topic of 1 MiB segments (the cleaner looks for work
// every 10 ms), round after round. Each round first writes a few MB of
// updates and tombstones to 300 keys (acks=all, so the model knows every
// record the log holds and in which order), kills the process a random
// moment later, restarts it, and reads the whole topic back: offsets
// increase, every record read is one that was written, each key's
// records come in the order they were written, and each key ends on its
// latest value (a key whose latest record is a tombstone ends on it or
// is gone).
func TestSIGKILLDuringCompaction(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	props := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(props, []byte("log.cleaner.backoff.ms=10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	p := startWeir(t, dir, addr, "--config", props)
	ctx := testContext(t, 5*time.Minute)

	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	cfg := map[string]*string{"cleanup.policy": str("compact"), "segment.bytes": str("1048576"), "min.cleanable.dirty.ratio": str("0.01"),
		"delete.retention.ms": str("100")}
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 1, 1, cfg, "compacted"); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(3, 5))
	m := &keyModel{latest: map[string]int64{}}
	cleanedMidway := 0
	for round := range rounds {
		m.produceRound(t, ctx, addr, rng, round)
		// Kill at once when a cleaning's file of the chosen kind shows up
		// (within 400 ms), or at a random moment: the cleaner runs
		// meanwhile.
		watch := []string{".cleaned", ".swap", ""}[round%3]
		killAt := time.Now().Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		if watch != "" {
			killAt = time.Now().Add(400 * time.Millisecond)
		}
		for time.Now().Before(killAt) && (watch == "" || !inFlight(t, filepath.Join(dir, "compacted-0"), watch)) {
			time.Sleep(200 * time.Microsecond)
		}
		p.kill()
		if inFlight(t, filepath.Join(dir, "compacted-0"), ".cleaned") || inFlight(t, filepath.Join(dir, "compacted-0"), ".swap") {
			cleanedMidway++
		}
		p = startWeir(t, dir, addr, "--config", props)
		m.check(t, ctx, addr, round)
	}
	t.Logf("%d kills, %d with a cleaning's files on disk", rounds, cleanedMidway)
	p.stop(t)
}

func str(s string) *string { return &s }

// keyModel is every record written, by offset: one partition, acks=all
// and synchronous produces, so the n-th record written has offset n.
type keyModel struct {
	records []modelRecord
	latest  map[string]int64 // each key's latest offset
}

type modelRecord struct {
	key, value string // value "" is a tombstone
}

func (m *keyModel) produceRound(t *testing.T, ctx context.Context, addr string, rng *rand.Rand, round int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("compacted"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pad := bytes.Repeat([]byte("p"), 2000)
	for batch := range 10 {
		var recs []*kgo.Record
		for i := range 200 {
			k := fmt.Sprint("k", rng.IntN(300))
			r := &kgo.Record{Key: []byte(k)}
			v := fmt.Sprintf("%d.%d.%d", round, batch, i)
			if rng.IntN(10) == 0 {
				v = "" // a tombstone
			} else {
				r.Value = append([]byte(v+"|"), pad...)
			}
			recs = append(recs, r)
			m.latest[k] = int64(len(m.records))
			m.records = append(m.records, modelRecord{k, v})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// check reads the whole topic and compares it with the model: every
// record read is the one written at its offset, and each key's last
// record read is its latest (or, for a key whose latest is a tombstone,
// nothing of it is left).
func (m *keyModel) check(t *testing.T, ctx context.Context, addr string, round int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("compacted"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The restarted broker shows the whole log once its high watermark
	// catches up with the log end: the number of records written.
	written := int64(len(m.records))
	adm := kadm.NewClient(cl)
	var end kadm.ListedOffset
	deadline := time.Now().Add(30 * time.Second)
	for end.Offset < written {
		ends, err := adm.ListEndOffsets(ctx, "compacted")
		if err != nil {
			t.Fatal(err)
		}
		end, _ = ends.Lookup("compacted", 0)
		if end.Offset > written || time.Now().After(deadline) {
			t.Fatalf("round %d: log ends at %d after %d records", round, end.Offset, written)
		}
		if end.Offset < written {
			time.Sleep(20 * time.Millisecond)
		}
	}
	lastRead := map[string]int64{}
	last := int64(-1)
	read := 0
	for last < written-1 {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := fs.Err0(); err != nil {
			t.Fatalf("round %d: poll at %d of %d: %v", round, last, written, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset <= last || r.Offset >= written {
				t.Fatalf("round %d: offset %d after %d", round, r.Offset, last)
			}
			last = r.Offset
			read++
			v, _, _ := strings.Cut(string(r.Value), "|")
			if want := m.records[r.Offset]; string(r.Key) != want.key || v != want.value {
				t.Fatalf("round %d: read %s=%q at %d, written %s=%q", round, r.Key, v, r.Offset, want.key, want.value)
			}
			lastRead[string(r.Key)] = r.Offset
		})
	}
	for k, off := range m.latest {
		got, ok := lastRead[k]
		if got != off && (ok || m.records[off].value != "") {
			t.Fatalf("round %d: %s ends at offset %d (read: %v), its latest record is at %d", round, k, got, ok, off)
		}
	}
	t.Logf("round %d: %d records read of %d written", round, read, written)
}

// inFlight reports whether a file of a cleaning with the given suffix
// (.cleaned or .swap) is in the partition directory.
func inFlight(t *testing.T, dir, suffix string) bool {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if strings.HasSuffix(e.Name(), suffix) {
			return true
		}
	}
	return false
}
