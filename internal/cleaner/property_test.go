package cleaner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/internal/log"
)

// model is what a compacted log must hold: every record produced, minus
// what cleaning rounds may remove.
type model struct {
	recs []modelRec // by offset
}

type modelRec struct {
	offset  int64
	key     string
	value   string
	tomb    bool
	horizon int64 // ms; -1 until a round first keeps the tombstone
}

func (m *model) String(from int64) []string {
	var out []string
	for _, r := range m.recs {
		if r.offset < from {
			continue
		}
		v := r.value
		if r.tomb {
			v = "nil"
		}
		out = append(out, fmt.Sprintf("%d:%s=%s", r.offset, r.key, v))
	}
	return out
}

// round applies a cleaning round at now that ended at end and rewrote the
// segments below processed: below end each key keeps only its latest
// record, a tombstone until its horizon; a tombstone a round keeps gets a
// horizon of now + retention; records past end stay.
func (m *model) round(end, processed, now int64, retention time.Duration) {
	latest := map[string]int64{}
	for _, r := range m.recs {
		if r.offset < end {
			latest[r.key] = r.offset
		}
	}
	kept := m.recs[:0]
	for _, r := range m.recs {
		switch {
		case r.offset < end && r.offset != latest[r.key]:
			continue
		case r.offset < end && r.tomb && r.horizon >= 0 && now >= r.horizon:
			continue
		case r.offset < processed && r.tomb && r.horizon < 0:
			r.horizon = now + retention.Milliseconds()
		}
		kept = append(kept, r)
	}
	m.recs = kept
}

// TestCleaningMatchesModel produces random keyed records and tombstones
// in batches of every codec, rolls segments, moves the clock and reopens
// the log at random, cleans at random points (with a random high
// watermark, and a key map large or holding a handful of keys), and after
// every round checks the whole log against the model: exactly the
// records it keeps, in offset order, tombstones only until their horizon,
// and batches emptied by cleaning only where a segment ends.
func TestCleaningMatchesModel(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	if n, err := strconv.Atoi(os.Getenv("WEIR_CLEANER_SEEDS")); err == nil {
		seeds = n // a longer search: WEIR_CLEANER_SEEDS=500
	}
	for seed := 1; seed <= seeds; seed++ {
		for _, small := range []bool{false, true} {
			t.Run(fmt.Sprintf("seed=%d/small-map=%v", seed, small), func(t *testing.T) {
				checkAgainstModel(t, uint64(seed), small)
			})
		}
	}
}

func checkAgainstModel(t *testing.T, seed uint64, small bool) {
	rng := rand.New(rand.NewPCG(seed, 17))
	ccfg := DefaultConfig()
	if small {
		ccfg.DedupeBufferSize = 128 // 8 slots: 7 keys a round
	}
	lcfg := testLogConfig()
	stable := int64(1 << 62)
	e := newEnv(t, lcfg, ccfg, func(p *Partition) { p.Stable = func() int64 { return stable } })
	codecs := []int{log.CompressionNone, log.CompressionNone, log.CompressionGzip, log.CompressionSnappy, log.CompressionLZ4, log.CompressionZstd}
	var m model
	rounds := 0
	for op := 0; op < 300; op++ {
		switch x := rng.IntN(100); {
		case x < 55:
			var recs []rec
			for range 1 + rng.IntN(4) {
				k := fmt.Sprint("k", rng.IntN(12))
				if rng.IntN(5) == 0 {
					recs = append(recs, tomb(k))
				} else {
					recs = append(recs, val(k, fmt.Sprint(op)))
				}
			}
			res, err := e.l.Append(e.batch(codecs[rng.IntN(len(codecs))], recs...), log.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range recs {
				mr := modelRec{offset: res.BaseOffset + int64(i), key: r.key, tomb: r.value == nil, horizon: -1}
				if r.value != nil {
					mr.value = *r.value
				}
				m.recs = append(m.recs, mr)
			}
		case x < 70:
			e.roll()
		case x < 78:
			e.clock.add(time.Duration(rng.IntN(5)) * time.Hour)
		case x < 81:
			reopen(t, e)
		default:
			if err := e.l.Flush(); err != nil {
				t.Fatal(err)
			}
			view, err := e.l.CleanerView()
			if err != nil {
				t.Fatal(err)
			}
			stable = view.LogStart + rng.Int64N(view.EndOffset-view.LogStart+1)
			if rng.IntN(3) == 0 {
				stable = view.EndOffset
			}
			st, ok := e.clean()
			if !ok {
				continue
			}
			rounds++
			if st.EndOffset > stable || st.EndOffset > view.ActiveBase {
				t.Fatalf("op %d: round ended at %d past the stable offset %d or the active segment %d", op, st.EndOffset, stable, view.ActiveBase)
			}
			processed := st.EndOffset
			for _, s := range view.Segments {
				if s.Base < st.EndOffset {
					processed = s.Next
				}
			}
			m.round(st.EndOffset, processed, e.clock.now().UnixMilli(), lcfg.Cleaning.DeleteRetention)
			checkLog(t, e, &m, op)
		}
	}
	if rounds == 0 {
		t.Fatal("no round ran")
	}
	reopen(t, e)
	checkLog(t, e, &m, -1)
}

// checkLog compares the log with the model; batches emptied by cleaning
// must end where a segment ends.
func checkLog(t *testing.T, e *env, m *model, op int) {
	t.Helper()
	view, err := e.l.CleanerView()
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int64]bool{}
	for _, s := range view.Segments {
		ends[s.Next] = true
	}
	var got []string
	for _, r := range e.records() {
		if strings.Contains(r, "(empty to ") {
			var base, last int64
			fmt.Sscanf(r, "%d:(empty to %d)", &base, &last)
			if !ends[last+1] {
				t.Fatalf("op %d: emptied batch %s does not end a segment (segments %+v)", op, r, view.Segments)
			}
			continue
		}
		got = append(got, r)
	}
	want := m.String(view.LogStart)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("op %d: log\n%v\nmodel\n%v", op, got, want)
	}
}

// reopen closes the log and opens it again, as a restart does.
func reopen(t *testing.T, e *env) {
	t.Helper()
	cfg := e.l.Config()
	e.c.Remove(e.tp)
	if err := e.l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := log.Open(filepath.Join(e.root, "t-0"), cfg, log.Options{Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	e.l = l
	t.Cleanup(func() { l.Close() })
	e.part.Log = l
	if err := e.c.Add(e.part); err != nil {
		t.Fatal(err)
	}
}
