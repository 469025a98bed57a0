package txn

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// FuzzPartition drives a Partition with an arbitrary sequence of
// requests, write outcomes, marker outcomes, ticks and failovers (each
// input byte picks the next step) and checks what must hold whatever
// happens:
//   - nothing panics, and every request is answered exactly once
//     (failovers answer what they drop);
//   - the log is the truth: for every transactional id with no
//     transition in flight, the state in memory equals what a new leader
//     replaying the committed records would load;
//   - durable epochs never go backwards for a producer id.
func FuzzPartition(f *testing.F) {
	f.Add([]byte{0, 9, 1, 9, 2, 9, 5, 9, 5})
	f.Add([]byte{0, 9, 1, 9, 0, 9, 9, 5, 9, 3, 9})
	f.Add([]byte{0, 9, 16, 9, 6, 7, 9, 5, 9, 8, 1, 9})
	f.Add([]byte{0, 10, 0, 9, 1, 11, 9, 2, 12, 4, 5, 9})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 400 {
			steps = steps[:400]
		}
		m := newModel(t)
		for i, b := range steps {
			m.step(b, i)
			m.check()
		}
		m.failover()
		m.check()
	})
}

type model struct {
	t        *testing.T
	cfg      Config
	p        *Partition
	now      int64
	log      []Record
	writes   []Write
	markers  map[string]Markers
	nextRef  Ref
	answered map[Ref]int
	refs     map[Ref]bool
	epochs   map[int64]int16 // highest epoch seen per producer id
	ids      *counterIDs
}

func newModel(t *testing.T) *model {
	m := &model{t: t, now: 1000, markers: map[string]Markers{}, answered: map[Ref]int{}, refs: map[Ref]bool{},
		epochs: map[int64]int16{}, ids: &counterIDs{next: 1}}
	m.cfg = Config{IDs: m.ids, MaxTimeoutMs: 100_000, ExpirationMs: 50_000}
	m.p = NewPartition(m.cfg, 0, 0)
	return m
}

var (
	modelIDs   = []string{"a", "b"}
	modelParts = []TopicPartition{{"x", 0}, {"x", 1}, {"y", 0}}
)

func (m *model) ref() Ref {
	m.nextRef++
	m.refs[m.nextRef] = true
	return m.nextRef
}

// current is what a well-behaved producer of id would send: its
// coordinator's producer id and epoch.
func (m *model) current(id string) (int64, int16) {
	if t := m.p.txns[id]; t != nil {
		return t.producerID, t.epoch
	}
	return 0, 0
}

func (m *model) step(b byte, i int) {
	id := modelIDs[int(b>>4)%len(modelIDs)]
	pid, epoch := m.current(id)
	if b&0x80 != 0 {
		// A zombie: an older epoch.
		epoch--
	}
	v := V0
	if i%3 == 0 {
		v = V2
	}
	tp := modelParts[int(b>>5)%len(modelParts)]
	switch b & 0x0f {
	case 0:
		m.apply(m.p.InitProducerID(m.ref(), id, 30_000, nil, m.now))
	case 1:
		m.apply(m.p.AddPartitions(m.ref(), id, pid, epoch, []TopicPartition{tp}, v, m.now))
	case 2:
		m.apply(m.p.EndTxn(m.ref(), id, pid, epoch, true, v, m.now))
	case 3:
		m.apply(m.p.EndTxn(m.ref(), id, pid, epoch, false, v, m.now))
	case 4:
		m.apply(m.p.InitProducerID(m.ref(), id, 30_000, &ProducerIDEpoch{ProducerID: pid, Epoch: epoch}, m.now))
	case 5, 9:
		m.appendAll(0)
	case 6:
		m.appendAll(kerr.NotEnoughReplicas.Code)
	case 7:
		m.markersAll(0)
	case 8:
		m.markersAll(kerr.NotLeaderForPartition.Code)
	case 10:
		m.now += 40_000
		m.apply(m.p.AbortTimedOut(m.now))
	case 11:
		m.now += 60_000
		m.apply(m.p.Expire(m.now))
	case 12:
		m.failover()
	case 13:
		m.p.Verify(id, pid, epoch, []TopicPartition{tp})
	case 14:
		m.markersAll(kerr.InvalidProducerEpoch.Code)
	default:
		m.apply(m.p.AddPartitions(m.ref(), id, pid, epoch, modelParts, v, m.now))
	}
}

func (m *model) apply(o Output) {
	for _, a := range o.Answers {
		if !m.refs[a.Ref] {
			m.t.Fatalf("answer for unknown ref %d", a.Ref)
		}
		m.answered[a.Ref]++
		if m.answered[a.Ref] > 1 {
			m.t.Fatalf("ref %d answered twice", a.Ref)
		}
	}
	m.writes = append(m.writes, o.Writes...)
	for _, mk := range o.Markers {
		prev, ok := m.markers[mk.TransactionalID]
		if ok && mk.Retry {
			// Retries add to what is outstanding.
			mk.Partitions = append(prev.Partitions, mk.Partitions...)
		}
		m.markers[mk.TransactionalID] = mk
	}
}

func (m *model) appendAll(code int16) {
	ws := m.writes
	m.writes = nil
	for _, w := range ws {
		if code == 0 {
			m.log = append(m.log, w.Records...)
		}
		m.apply(m.p.Appended(w.ID, code, m.now))
	}
}

func (m *model) markersAll(code int16) {
	ms := m.markers
	m.markers = map[string]Markers{}
	for id, mk := range ms {
		res := make([]MarkerResult, len(mk.Partitions))
		for k, tp := range mk.Partitions {
			res[k] = MarkerResult{Partition: tp, Code: code}
		}
		m.apply(m.p.MarkersWritten(id, mk.ProducerID, mk.ProducerEpoch, mk.Commit, res, m.now))
	}
}

// failover replaces the partition with one loaded from the committed log;
// whatever was in flight is answered NOT_COORDINATOR by the old one.
func (m *model) failover() {
	m.apply(m.p.Abandon())
	for ref := range m.refs {
		if m.answered[ref] == 0 {
			m.t.Fatalf("ref %d never answered before failover", ref)
		}
	}
	m.p = m.replay(m.p.epoch + 1)
	m.writes, m.markers = nil, map[string]Markers{}
	m.apply(m.p.Loaded(m.now))
}

func (m *model) replay(epoch int32) *Partition {
	p := NewPartition(m.cfg, 0, epoch)
	for _, r := range m.log {
		if err := p.Replay(r.Key, r.Value); err != nil {
			m.t.Fatalf("replay of a record the partition wrote: %v", err)
		}
	}
	return p
}

func (m *model) check() {
	replayed := m.replay(m.p.epoch)
	for id, t := range m.p.txns {
		if t.pending != noState || t.markers != nil || t.failedFence || t.state.preparing() {
			// In flight; a fencing epoch held only in memory is
			// forgotten by a failover, as in Kafka.
			continue
		}
		if e, ok := m.epochs[t.producerID]; ok && t.epoch < e && t.epoch != NoProducerEpoch {
			m.t.Fatalf("%s: producer %d went back from epoch %d to %d", id, t.producerID, e, t.epoch)
		}
		m.epochs[t.producerID] = max(m.epochs[t.producerID], t.epoch)
		r := replayed.txns[id]
		if r == nil {
			if t.epoch == NoProducerEpoch {
				continue // created, its first record not written
			}
			m.t.Fatalf("%s in memory (%s) but not in the log", id, dumpTxn(t))
		}
		if got, want := durable(t), durable(r); got != want {
			m.t.Fatalf("%s differs from the log:\nmemory %s\nlog    %s", id, got, want)
		}
	}
	for id := range replayed.txns {
		if m.p.txns[id] == nil {
			m.t.Fatalf("%s in the log but not in memory", id)
		}
	}
}

// durable is what a record holds (the version-1 encoding keeps it all).
func durable(t *txn) string {
	return fmt.Sprintf("%s pid=%d prev=%d next=%d epoch=%d timeout=%d parts=%v start=%d update=%d tv=%d",
		t.state, t.producerID, t.prevProducerID, t.nextProducerID, t.epoch, t.timeoutMs, t.parts.sorted(), t.startMs, t.updateMs, t.version)
}
