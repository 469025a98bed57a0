package producer

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

// headerLog is a HeaderScanner over headers held in memory.
type headerLog struct {
	headers []log.BatchHeader
	failAt  int // fail after this many headers; <0 never
}

func (l *headerLog) ScanMarkers(from int64, fn func(*log.BatchHeader, *log.Marker) bool) error {
	for i, h := range l.headers {
		if i == l.failAt {
			return errors.New("read error")
		}
		if h.LastOffset() >= from && !fn(&h, nil) {
			return nil
		}
	}
	return nil
}

// randomWorkload drives p with batches from a few producers: mostly in
// order, with retries of recent batches, gaps, epoch bumps, stale epochs,
// transactional and non-idempotent batches mixed in.
func randomWorkload(t *testing.T, p *partition, rng *rand.Rand, n int) {
	t.Helper()
	type prod struct {
		epoch int16
		next  int32
		sent  []log.BatchHeader
	}
	prods := map[int64]*prod{10: {}, 11: {}, 12: {epoch: 3, next: 1000}}
	for range n {
		pid := int64(10 + rng.IntN(4))
		if pid == 13 {
			if _, err := p.produce(header(NoProducerID, NoProducerEpoch, NoSequence, 1+rng.Int32N(3))); err != nil {
				t.Fatalf("non-idempotent batch: %v", err)
			}
			continue
		}
		pr := prods[pid]
		count := 1 + rng.Int32N(4)
		h := header(pid, pr.epoch, pr.next, count)
		switch r := rng.IntN(20); {
		case r < 2 && len(pr.sent) > 0: // retry
			h = pr.sent[len(pr.sent)-1-rng.IntN(min(len(pr.sent), 7))]
		case r == 2: // gap
			h.BaseSequence += 1 + rng.Int32N(3)
		case r == 3: // bump the epoch
			pr.epoch++
			pr.next = 0
			h = header(pid, pr.epoch, 0, count)
		case r == 4 && pr.epoch > 0: // zombie
			h.ProducerEpoch--
		case r == 5:
			h.Attributes |= 0x10
		}
		got, err := p.produce(h)
		if err == nil {
			pr.next = addSequence(lastSequence(&got), 1)
			pr.sent = append(pr.sent, header(pid, got.ProducerEpoch, got.BaseSequence, got.NumRecords))
		}
	}
}

func TestRebuildEqualsLiveState(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		clock := newFakeClock(time.UnixMilli(testTs + 10_000))
		live := newPartition(Options{Now: clock.now})
		randomWorkload(t, live, rng, 400)
		if live.dups == 0 || live.refused == 0 || len(live.written) < 200 {
			t.Fatalf("seed %d: workload too tame: %d written, %d duplicates, %d refused", seed, len(live.written), live.dups, live.refused)
		}

		rebuilt := NewState(Options{Now: clock.now})
		rebuilt.Record(&log.BatchHeader{ProducerID: 99}) // must be forgotten
		if err := rebuilt.Rebuild(&headerLog{headers: live.written, failAt: -1}, 0); err != nil {
			t.Fatal(err)
		}
		if want, got := live.s.Entries(), rebuilt.Entries(); !reflect.DeepEqual(want, got) {
			t.Fatalf("seed %d: rebuilt state\n%+v\nwant\n%+v", seed, got, want)
		}
		// The two states answer every probe alike.
		for pid := int64(10); pid <= 12; pid++ {
			for epoch := int16(-1); epoch <= 6; epoch++ {
				for seq := int32(0); seq < 1200; seq += 1 + int32(rng.IntN(8)) {
					h := header(pid, epoch, seq, 1+rng.Int32N(4))
					a, b := live.s.Check(&h), rebuilt.Check(&h)
					if !reflect.DeepEqual(a, b) {
						t.Fatalf("seed %d: probe %+v: live %v, rebuilt %v", seed, h, a, b)
					}
				}
			}
		}
	}
}

func TestRebuildExpiresAndFailsClean(t *testing.T) {
	old, recent := header(1, 0, 0, 1), header(2, 0, 0, 1)
	old.MaxTimestamp = testTs
	recent.BaseOffset, recent.MaxTimestamp = 1, testTs+time.Hour.Milliseconds()
	clock := newFakeClock(time.UnixMilli(testTs).Add(90 * time.Minute))
	s := NewState(Options{Expiration: time.Hour, Now: clock.now})
	if err := s.Rebuild(&headerLog{headers: []log.BatchHeader{old, recent}, failAt: -1}, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Entry(1); ok || s.Len() != 1 {
		t.Fatalf("expired producer kept after rebuild: %+v", s.Entries())
	}

	err := s.Rebuild(&headerLog{headers: []log.BatchHeader{old, recent}, failAt: 1}, 0)
	if err == nil || s.Len() != 0 {
		t.Fatalf("failed rebuild: %v, %d producers left", err, s.Len())
	}
}

func TestRebuildFrom(t *testing.T) {
	var hs []log.BatchHeader
	for i := range 6 {
		h := header(1, 0, int32(2*i), 2)
		h.BaseOffset = int64(2 * i)
		hs = append(hs, h)
	}
	s := NewState(Options{Now: func() time.Time { return time.UnixMilli(testTs) }})
	if err := s.Rebuild(&headerLog{headers: hs, failAt: -1}, 7); err != nil {
		t.Fatal(err)
	}
	e, _ := s.Entry(1)
	if len(e.Batches) != 3 || e.Batches[0].FirstOffset != 6 {
		t.Fatalf("rebuilt from 7: %+v", e)
	}
	retry := header(1, 0, 2, 2)
	if err := s.Check(&retry); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("batch below the rebuild start: %v", err)
	}
}
