package producer

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"weir/internal/log"
)

// FuzzState drives a partition's state with arbitrary batch headers,
// expiry and rebuilds, and checks what must always hold: nothing panics,
// a refused batch changes nothing, accepted batches of one producer epoch
// have contiguous sequences, an accepted epoch never goes back, a new
// epoch of a known producer starts at 0, a duplicate is answered with a
// batch that really was written, and a rebuild from the written headers
// gives the live state back.
//
// Each operation takes five bytes: producer and operation, epoch,
// sequence choice, a parameter, record count and transactional bit.
func FuzzState(f *testing.F) {
	f.Add([]byte{0x01, 0x01, 0, 0, 2, 0x01, 0x01, 0, 0, 2, 0x01, 0x01, 3, 0, 2})
	f.Add([]byte{0x02, 0x01, 2, 0, 4, 0x02, 0x01, 0, 0, 1, 0x02, 0x02, 1, 0, 1, 0x1e, 0, 0, 0, 0})
	f.Add([]byte{0x03, 0x03, 1, 9, 0x82, 0x00, 0, 4, 0, 0, 0x1b, 0, 0, 200, 0, 0x03, 0x03, 3, 1, 1})
	f.Add([]byte{0x01, 0x00, 1, 5, 3, 0x01, 0x01, 1, 5, 3, 0x01, 0x00, 0, 0, 1, 0x1f, 0, 0, 0, 0})

	f.Fuzz(func(t *testing.T, data []byte) {
		clock := newFakeClock(time.UnixMilli(testTs))
		p := newPartition(Options{Expiration: time.Hour, Now: clock.now})

		type track struct {
			known bool
			epoch int16
			last  int32
		}
		type key struct {
			pid         int64
			epoch       int16
			first, last int32
		}
		tracks := map[int64]*track{}
		accepted := map[key]BatchMetadata{}
		var sent []log.BatchHeader
		expiredAny := false

		for len(data) >= 5 {
			op := data[:5]
			data = data[5:]
			pid := int64(op[0]%4) - 1
			switch kind := (op[0] >> 2) % 8; kind {
			case 6: // time passes, idle producers expire
				clock.add(time.Duration(op[3]) * time.Minute)
				if p.s.ExpireProducers() > 0 {
					expiredAny = true
				}
				for id, tr := range tracks {
					if _, ok := p.s.Entry(id); !ok {
						tr.known = false
					}
				}
				continue
			case 7: // restart: rebuild from the written headers
				rebuilt := NewState(Options{Expiration: time.Hour, Now: clock.now})
				if err := rebuilt.Rebuild(&headerLog{headers: p.written, failAt: -1}, 0); err != nil {
					t.Fatal(err)
				}
				p.s.ExpireProducers()
				if !expiredAny && !reflect.DeepEqual(p.s.Entries(), rebuilt.Entries()) {
					t.Fatalf("rebuilt state\n%+v\nwant\n%+v", rebuilt.Entries(), p.s.Entries())
				}
				p.s = rebuilt
				for id, tr := range tracks {
					if _, ok := p.s.Entry(id); !ok {
						tr.known = false
					}
				}
				continue
			}

			tr := tracks[pid]
			if tr == nil {
				tr = &track{}
				tracks[pid] = tr
			}
			epoch := int16(op[1]%5) - 1
			n := 1 + int32(op[4]%8)
			var seq int32
			switch op[2] % 5 {
			case 0: // the expected next sequence
				seq = 0
				if tr.known && tr.epoch == epoch {
					seq = addSequence(tr.last, 1)
				}
			case 1:
				seq = int32(op[3])
			case 2:
				seq = math.MaxInt32 - int32(op[3]%8)
			case 3: // a retry of something sent earlier
				if len(sent) > 0 {
					h := sent[len(sent)-1-int(op[3])%len(sent)]
					pid, epoch, seq, n = h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.NumRecords
					if tracks[pid] == nil {
						tracks[pid] = &track{}
					}
					tr = tracks[pid]
				}
			case 4:
				seq = -1 - int32(op[3])
			}
			h := header(pid, epoch, seq, n)
			if op[4]&0x80 != 0 {
				h.Attributes |= 0x10
			}
			p.ts = clock.now().UnixMilli()
			sent = append(sent, h)

			before := p.s.Entries()
			got, err := p.produce(h)
			var dup *DuplicateError
			switch {
			case errors.As(err, &dup):
				want, ok := accepted[key{pid, epoch, seq, lastSequence(&h)}]
				if !ok || want != dup.Batch {
					t.Fatalf("duplicate of %+v answered %+v, written was %+v (%v)", h, dup.Batch, want, ok)
				}
			case err != nil:
			case pid < 0:
			default:
				if tr.known && epoch != NoProducerEpoch {
					switch {
					case epoch < tr.epoch:
						t.Fatalf("accepted epoch %d after %d: %+v", epoch, tr.epoch, h)
					case epoch == tr.epoch && tr.last != NoSequence && seq != addSequence(tr.last, 1):
						t.Fatalf("accepted sequence %d after %d in epoch %d", seq, tr.last, epoch)
					case epoch > tr.epoch && tr.epoch != NoProducerEpoch && seq != 0:
						t.Fatalf("new epoch %d of a known producer started at %d", epoch, seq)
					}
				}
				*tr = track{known: true, epoch: epoch, last: lastSequence(&got)}
				accepted[key{pid, epoch, seq, lastSequence(&got)}] = BatchMetadata{
					FirstSeq: seq, LastSeq: lastSequence(&got), FirstOffset: got.BaseOffset, LastOffset: got.LastOffset(), Timestamp: got.MaxTimestamp,
				}
			}
			if err != nil && !reflect.DeepEqual(before, p.s.Entries()) {
				t.Fatalf("refused batch %+v (%v) changed the state", h, err)
			}
			if s := p.s.Len(); s > 3 {
				t.Fatalf("%d producers known, at most 3 ids are used", s)
			}
		}
	})
}
