package fetchsession

import (
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

// TestEntrySize keeps a session's entry at 24 bytes (its Source a
// pointer, not an interface): a leader holds one per partition per
// follower's session, written or not.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 24 {
		t.Fatalf("entry is %d bytes, want at most 24", n)
	}
}

// TestBlankEntriesHoldNoExt: partitions never written (fetched at 0 with
// no last fetched epoch, answered 0 and 0) take no entryExt, whatever
// their leader epochs; the first fetch offset past 0 takes one, and
// removing it lets it go.
func TestBlankEntriesHoldNoExt(t *testing.T) {
	s := newSession(1, true, time.Unix(0, 0))
	ref := TopicRef{ID: [16]byte{1}}
	blank := func(epoch int32) PartitionData {
		return PartitionData{LogStartOffset: 0, MaxBytes: 1 << 20, LeaderEpoch: epoch, LastFetchedEpoch: -1}
	}
	for p := range int32(100) {
		i, _ := s.put(ref, p, blank(p%3))
		s.mustRespond(&s.entries[i], Outcome{})
	}
	if len(s.exts) != 0 {
		t.Fatalf("%d exts for 100 never-written partitions", len(s.exts))
	}
	for p := range int32(100) {
		e := &s.entries[s.find(ref, p)]
		if d := s.data(e); d != blank(p%3) {
			t.Fatalf("partition %d holds %+v, want %+v", p, d, blank(p%3))
		}
		if hw, ls := s.answered(e); hw != 0 || ls != 0 {
			t.Fatalf("partition %d answered %d, %d, want 0, 0", p, hw, ls)
		}
	}
	d := blank(0)
	d.FetchOffset = 7
	s.put(ref, 5, d)
	if len(s.exts) != 1 || s.data(&s.entries[s.find(ref, 5)]) != d {
		t.Fatalf("a fetch at 7: exts %d, data %+v", len(s.exts), s.data(&s.entries[s.find(ref, 5)]))
	}
	s.remove(ref, 5)
	if s.exts != nil || s.extFree != nil {
		t.Fatalf("exts %v, free %v after the only extended entry went", s.exts, s.extFree)
	}
}

// TestEntriesAgainstModel drives a session with random data and
// outcomes and checks every entry's data and answers, and every
// mustRespond, against a plain map doing Kafka's rule on full fields.
func TestEntriesAgainstModel(t *testing.T) {
	type held struct {
		d            PartitionData
		hw, logStart int64
	}
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		s := newSession(int32(seed%2)-1, true, time.Unix(0, 0))
		model := map[int32]*held{}
		pick := func(vs ...int64) int64 { return vs[rng.IntN(len(vs))] }
		for step := range 2000 {
			p := int32(rng.IntN(40))
			ref := TopicRef{ID: [16]byte{byte(p % 3)}}
			switch rng.IntN(10) {
			case 0:
				if got := s.remove(ref, p); got != (model[p] != nil) {
					t.Fatalf("seed %d step %d: remove %d = %v", seed, step, p, got)
				}
				delete(model, p)
			case 1, 2, 3:
				d := PartitionData{FetchOffset: pick(0, 0, 0, 5), LogStartOffset: pick(0, 0, -1, 3),
					MaxBytes: int32(pick(100, 100, 200)), LeaderEpoch: int32(pick(-1, 0, 1, 2)), LastFetchedEpoch: int32(pick(-1, -1, 0, 2))}
				s.put(ref, p, d)
				if model[p] == nil {
					model[p] = &held{hw: -1, logStart: -1}
				}
				model[p].d = d
			default:
				m := model[p]
				if m == nil {
					continue
				}
				o := Outcome{HighWatermark: pick(0, 0, -1, 4), LogStartOffset: pick(0, 0, -1, 2),
					Bytes: pick(0, 0, 0, 10), ErrorCode: int16(pick(0, 0, 0, 6)), Diverging: rng.IntN(8) == 0}
				want := o.Bytes > 0 || o.Diverging || o.ErrorCode != 0 || m.hw != o.HighWatermark || m.logStart != o.LogStartOffset
				m.hw, m.logStart = o.HighWatermark, o.LogStartOffset
				if o.ErrorCode != 0 {
					m.hw = -1
				}
				if got := s.mustRespond(&s.entries[s.find(ref, p)], o); got != want {
					t.Fatalf("seed %d step %d: mustRespond(%d, %+v) = %v, want %v", seed, step, p, o, got, want)
				}
			}
			extended := 0
			for q, m := range model {
				e := &s.entries[s.find(TopicRef{ID: [16]byte{byte(q % 3)}}, q)]
				hw, ls := s.answered(e)
				if d := s.data(e); d != m.d || hw != m.hw || ls != m.logStart {
					t.Fatalf("seed %d step %d: partition %d holds %+v, %d, %d, want %+v, %d, %d", seed, step, q, d, hw, ls, m.d, m.hw, m.logStart)
				}
				if e.ext > 0 {
					extended++
				}
			}
			if len(s.exts)-len(s.extFree) != extended {
				t.Fatalf("seed %d step %d: %d exts in use, %d entries extended", seed, step, len(s.exts)-len(s.extFree), extended)
			}
		}
	}
}
