package share

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The property test drives a Partition with random operations and checks
// it against a model that tracks every offset on its own:
//
//   - no record is handed out while another member holds it;
//   - no acknowledged or archived record is handed out again;
//   - every delivery count reported is the model's count, and never above
//     the delivery count limit;
//   - only records of the log below the high watermark are handed out;
//   - an acknowledgement succeeds exactly when the member holds every
//     offset it names (at or above the SPSO), and a failed one changes
//     nothing;
//   - no pending record lies below the SPSO, the window is well formed and
//     within the in-flight cap (plus the rest of one log batch);
//   - a restart from the encoded durable records gives back the same
//     state, locks ended as expiries; with acquisitions not persisted
//     (StateRecord.WithoutLocks, as the broker writes them), no
//     acknowledgement is lost, nothing not done comes back done, and a
//     record held at the restart comes back with its delivery count or
//     one less;
//   - at the end, acquiring and accepting until nothing is left drains the
//     log: every record is done and the SPSO reaches the high watermark.

type offKind uint8

const (
	kindUntouched offKind = iota // not produced yet
	kindRecord
	kindGap  // compacted away / never written
	kindSkip // aborted transactional data
)

type modelRec struct {
	kind   offKind
	count  int16
	holder string
	until  time.Time
	done   bool // acknowledged or archived: never deliver again
}

type propModel struct {
	t      *testing.T
	rng    *rand.Rand
	cfg    Config
	p      *Partition
	now    time.Time
	log    logSim
	recs   []modelRec
	store  [][]byte
	maxLen int64 // longest log batch
	// lossy persists acquisitions as the broker does: without the
	// acquired records (StateRecord.WithoutLocks).
	lossy bool
}

func (m *propModel) rec(off int64) *modelRec {
	for int64(len(m.recs)) <= off {
		m.recs = append(m.recs, modelRec{})
	}
	return &m.recs[off]
}

// normalise ends the model's locks that expired by now, as the partition
// does (an expiry archives a record at the limit).
func (m *propModel) normalise() {
	for i := range m.recs {
		r := &m.recs[i]
		if r.holder != "" && !r.until.After(m.now) {
			r.holder = ""
			if r.count >= m.cfg.DeliveryCountLimit {
				r.done = true
			}
		}
	}
}

func (m *propModel) persist(rec StateRecord) {
	if rec.IsZero() {
		return
	}
	if rec.StartOffset != m.p.StartOffset() {
		m.t.Fatalf("record start %d, partition start %d", rec.StartOffset, m.p.StartOffset())
	}
	b, err := rec.AppendTo(nil)
	if err != nil {
		m.t.Fatalf("encode: %v", err)
	}
	m.store = append(m.store, b)
}

func (m *propModel) produce() {
	for range 1 + m.rng.IntN(3) {
		n := int64(1 + m.rng.IntN(12))
		switch m.rng.IntN(10) {
		case 0: // a gap: offsets that compaction removed
			for o := m.log.end; o < m.log.end+n; o++ {
				m.rec(o).kind = kindGap
			}
		case 1:
			m.log.batches = append(m.log.batches, Batch{Base: m.log.end, Last: m.log.end + n - 1, Skip: true})
			for o := m.log.end; o < m.log.end+n; o++ {
				m.rec(o).kind = kindSkip
			}
		default:
			m.log.batches = append(m.log.batches, Batch{Base: m.log.end, Last: m.log.end + n - 1})
			for o := m.log.end; o < m.log.end+n; o++ {
				m.rec(o).kind = kindRecord
			}
		}
		m.maxLen = max(m.maxLen, n)
		m.log.end += n
	}
	// The high watermark lags behind the log end now and then (it never
	// goes back).
	hwm := m.log.end
	if m.rng.IntN(4) == 0 && len(m.log.batches) > 1 {
		hwm = m.log.batches[len(m.log.batches)-2].Last + 1
	}
	m.log.hwm = max(m.log.hwm, hwm)
}

var propMembers = []string{"A", "B", "C"}

func (m *propModel) acquire(member string, max int32, mode AcquireMode, read int) {
	m.normalise()
	fetch := m.p.NextFetchOffset(m.now)
	req := AcquireRequest{
		Member:        member,
		FetchOffset:   fetch,
		Batches:       m.log.read(fetch, read),
		HighWatermark: m.log.hwm,
		MaxRecords:    max,
		BatchSize:     int32(1 + m.rng.IntN(20)),
		Mode:          mode,
	}
	startBefore := m.p.StartOffset()
	res, err := m.p.Acquire(req, m.now)
	if err != nil {
		m.t.Fatalf("acquire: %v", err)
	}
	var n int64
	prevLast := int64(-1)
	for _, r := range res.Acquired {
		if r.First > r.Last || r.First <= prevLast {
			m.t.Fatalf("acquired ranges out of order: %+v", res.Acquired)
		}
		prevLast = r.Last
		for off := r.First; off <= r.Last; off++ {
			mr := m.rec(off)
			switch {
			case mr.kind != kindRecord:
				m.t.Fatalf("offset %d handed out but it is not a record (kind %d)", off, mr.kind)
			case off >= m.log.hwm:
				m.t.Fatalf("offset %d handed out at or above the high watermark %d", off, m.log.hwm)
			case mr.done:
				m.t.Fatalf("offset %d handed out after it was acknowledged or archived", off)
			case mr.holder != "":
				m.t.Fatalf("offset %d handed out to %s while %s holds it", off, member, mr.holder)
			case r.DeliveryCount != mr.count+1:
				m.t.Fatalf("offset %d delivery count %d, model says %d", off, r.DeliveryCount, mr.count+1)
			case r.DeliveryCount > m.cfg.DeliveryCountLimit:
				m.t.Fatalf("offset %d delivered %d times, limit %d", off, r.DeliveryCount, m.cfg.DeliveryCountLimit)
			}
			mr.count++
			mr.holder, mr.until = member, m.now.Add(m.cfg.LockDuration)
			n++
		}
	}
	if n != res.Records {
		m.t.Fatalf("acquired %d records, reported %d", n, res.Records)
	}
	if mode == RecordLimit && n > int64(max) {
		m.t.Fatalf("record_limit: %d records for max %d", n, max)
	}
	if mode == BatchOptimized && n > int64(max)+m.maxLen-1 {
		m.t.Fatalf("batch_optimized: %d records for max %d, batches up to %d", n, max, m.maxLen)
	}
	if m.lossy {
		m.persist(res.Change.WithoutLocks(startBefore))
	} else {
		m.persist(res.Change)
	}
}

// held returns the stretches of offsets member holds now.
func (m *propModel) held(member string) [][2]int64 {
	var out [][2]int64
	for i := range m.recs {
		r := &m.recs[i]
		if r.holder != member || !r.until.After(m.now) {
			continue
		}
		off := int64(i)
		if n := len(out); n > 0 && out[n-1][1] == off-1 {
			out[n-1][1] = off
			continue
		}
		out = append(out, [2]int64{off, off})
	}
	return out
}

func (m *propModel) ack(member string) {
	m.normalise()
	var batches []AckBatch
	if held := m.held(member); len(held) > 0 && m.rng.IntN(8) != 0 {
		for _, h := range held {
			if m.rng.IntN(3) == 0 {
				continue
			}
			first := h[0] + m.rng.Int64N(h[1]-h[0]+1)
			last := first + m.rng.Int64N(h[1]-first+1)
			b := AckBatch{First: first, Last: last}
			if m.rng.IntN(3) == 0 {
				for range last - first + 1 {
					b.Types = append(b.Types, AckType(m.rng.IntN(5)))
				}
			} else {
				b.Types = []AckType{[]AckType{AckAccept, AckAccept, AckRelease, AckReject, AckRenew, AckGap}[m.rng.IntN(6)]}
			}
			batches = append(batches, b)
		}
	} else {
		// Anything at all: usually refused.
		first := m.rng.Int64N(m.log.end + 5)
		batches = []AckBatch{{First: first, Last: first + m.rng.Int64N(5), Types: []AckType{AckAccept}}}
	}
	want := true
	for _, b := range batches {
		for off := max(b.First, m.p.StartOffset()); off <= b.Last; off++ {
			if off >= m.p.next {
				want = false
				break
			}
			r := m.rec(off)
			if r.holder != member || !r.until.After(m.now) {
				want = false
			}
		}
	}
	before := m.p.Snapshot()
	beforeRuns := slices.Clone(m.p.runs)
	rec, err := m.p.Acknowledge(member, batches, m.now)
	if want != (err == nil) {
		m.t.Fatalf("acknowledge %+v by %s: err %v, model expected success %v", batches, member, err, want)
	}
	if err != nil {
		var ke *kerr.Error
		if !errors.As(err, &ke) || (ke != kerr.InvalidRecordState && ke != kerr.InvalidRequest) {
			m.t.Fatalf("acknowledge error %v is not INVALID_RECORD_STATE or INVALID_REQUEST", err)
		}
		if !slices.Equal(beforeRuns, m.p.runs) || !rec.IsZero() || fmt.Sprint(before) != fmt.Sprint(m.p.Snapshot()) {
			m.t.Fatalf("failed acknowledgement changed the partition")
		}
		return
	}
	for _, b := range batches {
		for off := max(b.First, before.StartOffset); off <= b.Last; off++ {
			r := m.rec(off)
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			switch t {
			case AckAccept, AckReject, AckGap:
				r.holder, r.done = "", true
			case AckRelease:
				r.holder = ""
				if r.count >= m.cfg.DeliveryCountLimit {
					r.done = true
				}
			case AckRenew:
				r.until = m.now.Add(m.cfg.LockDuration)
			}
		}
	}
	m.persist(rec)
}

func (m *propModel) leave(member string) {
	m.normalise()
	for i := range m.recs {
		r := &m.recs[i]
		if r.holder == member {
			r.holder = ""
			r.count--
		}
	}
	m.persist(m.p.ReleaseMember(member, m.now))
}

// restart rebuilds the partition from the encoded records and compares it
// with what the old one should turn into.
func (m *propModel) restart() {
	recs := make([]StateRecord, len(m.store))
	for i, b := range m.store {
		r, err := DecodeStateRecord(b)
		if err != nil {
			m.t.Fatalf("decode record %d: %v", i, err)
		}
		recs[i] = r
	}
	p, err := Restore(m.cfg, recs)
	if err != nil {
		m.t.Fatalf("restore: %v", err)
	}
	// A coordinator hands the records over folded into one snapshot: it
	// must restore to the same partition.
	folded, err := Fold(recs)
	if err != nil {
		m.t.Fatalf("fold: %v", err)
	}
	fp, err := Restore(m.cfg, []StateRecord{folded})
	if err != nil {
		m.t.Fatalf("restore the fold: %v", err)
	}
	if got, want := fp.Snapshot(), p.Snapshot(); !reflect.DeepEqual(got, want) {
		m.t.Fatalf("restored from the fold of %d records:\n%+v\nwant\n%+v", len(recs), got, want)
	}
	// Expected: the old runs with every lock ended as an expiry.
	want := &Partition{cfg: m.p.cfg, start: m.p.start, next: m.p.next, runs: slices.Clone(m.p.runs)}
	for i := range want.runs {
		r := &want.runs[i]
		if r.state == Acquired {
			r.state, r.member, r.deadline = Available, "", 0
			if r.count >= m.cfg.DeliveryCountLimit {
				r.state = Archived
			}
		}
	}
	want.coalesce()
	want.advance()
	if m.lossy {
		m.checkLossyRestore(want, p)
		m.p = p
		// The model follows the restored counts and states.
		for off := range int64(len(m.recs)) {
			r := &m.recs[off]
			r.holder = ""
			if r.kind != kindRecord {
				continue
			}
			st, n := stateAt(p, off)
			r.count, r.done = n, st == Acknowledged || st == Archived
		}
		return
	}
	if p.start != want.start || p.next != want.next || !slices.Equal(p.runs, want.runs) {
		m.t.Fatalf("restored %d-%d %+v, want %d-%d %+v", p.start, p.next, p.runs, want.start, want.next, want.runs)
	}
	m.p = p
	for i := range m.recs {
		r := &m.recs[i]
		if r.holder != "" {
			r.holder = ""
			if r.count >= m.cfg.DeliveryCountLimit {
				r.done = true
			}
		}
	}
}

// stateAt is the state and delivery count of off in p: offsets below the
// SPSO are done (Acknowledged stands for them), offsets past the end are
// fresh.
func stateAt(p *Partition, off int64) (RecordState, int16) {
	switch {
	case off < p.start:
		return Acknowledged, 0
	case off >= p.next:
		return Available, 0
	}
	r := p.runs[p.index(off)]
	return r.state, r.count
}

// checkLossyRestore compares a restore from records without acquisitions
// (got) with the state before the restart (m.p), locks ended (want): every
// acknowledged offset is still done, nothing not done came back done, and
// an offset held at the restart has its delivery count or one less;
// other offsets are as they were.
func (m *propModel) checkLossyRestore(want, got *Partition) {
	for off := range int64(len(m.recs)) {
		ws, wc := stateAt(want, off)
		gs, gc := stateAt(got, off)
		// Held: acquired in the partition at the restart (its lock may
		// be over in the model already); want may have archived it, at
		// the limit, and moved past it, so its count is taken before.
		bs, hc := stateAt(m.p, off)
		held := bs == Acquired
		wDone, gDone := ws == Acknowledged || ws == Archived, gs == Acknowledged || gs == Archived
		switch {
		case ws == Acknowledged && off >= want.start && gs != Acknowledged && off >= got.start:
			m.t.Fatalf("offset %d: acknowledged before the restart, %s after", off, gs)
		case gDone && !wDone:
			m.t.Fatalf("offset %d: %s after the restart, %s before", off, gs, ws)
		case wDone && !gDone && !(held && hc >= m.cfg.DeliveryCountLimit):
			m.t.Fatalf("offset %d: %s before the restart, %s after", off, ws, gs)
		case held && gs == Available && gc != hc && gc != hc-1:
			m.t.Fatalf("offset %d held at the restart: delivery count %d after, %d before", off, gc, hc)
		case !held && !wDone && (gs != ws || gc != wc):
			m.t.Fatalf("offset %d not held at the restart: %s/%d after, %s/%d before", off, gs, gc, ws, wc)
		}
	}
}

// check verifies the window's shape and that nothing pending lies below
// the SPSO.
func (m *propModel) check() {
	p := m.p
	if p.next < p.start {
		m.t.Fatalf("end %d before start %d", p.next, p.start)
	}
	want := p.start
	for i, r := range p.runs {
		switch {
		case r.first != want || r.last < r.first:
			m.t.Fatalf("run %d is %d-%d, want it to start at %d", i, r.first, r.last, want)
		case !r.state.valid():
			m.t.Fatalf("run %d state %d", i, r.state)
		case (r.state == Acquired) != (r.member != ""):
			m.t.Fatalf("run %d %s with member %q", i, r.state, r.member)
		case i > 0 && p.runs[i-1].sameAs(&r):
			m.t.Fatalf("runs %d and %d not merged", i-1, i)
		case i == 0 && r.state.terminal():
			m.t.Fatalf("SPSO %d did not move over %s run", p.start, r.state)
		case r.count > m.cfg.DeliveryCountLimit:
			m.t.Fatalf("run %d-%d delivery count %d", r.first, r.last, r.count)
		}
		want = r.last + 1
	}
	if want != p.next {
		m.t.Fatalf("runs end at %d, end offset %d", want-1, p.next-1)
	}
	// The in-flight cap holds, give or take the rest of the log batch that
	// reached it in batch_optimized mode.
	if p.InFlight() > int64(m.cfg.MaxRecordLocks)+m.maxLen-1 {
		m.t.Fatalf("%d in flight, cap %d, batches up to %d", p.InFlight(), m.cfg.MaxRecordLocks, m.maxLen)
	}
	if p.next > m.log.hwm && p.next > p.start {
		m.t.Fatalf("end offset %d at or past the high watermark %d", p.next-1, m.log.hwm)
	}
	for off := int64(0); off < min(p.start, int64(len(m.recs))); off++ {
		r := &m.recs[off]
		if r.kind == kindRecord && !r.done {
			m.t.Fatalf("offset %d below the SPSO %d is still pending", off, p.start)
		}
	}
}

// drain acquires and accepts until nothing is left. The SPSO then reaches
// the end of the last batch: offsets after it (compacted away) are
// unknown to the partition.
func (m *propModel) drain() {
	m.log.hwm = m.log.end
	end := int64(0)
	if n := len(m.log.batches); n > 0 {
		end = m.log.batches[n-1].Last + 1
	}
	for range 10000 {
		m.now = m.now.Add(m.cfg.LockDuration) // every lock ends
		m.acquire("A", 50, RecordLimit, 0)
		m.check()
		for _, h := range m.held("A") {
			rec, err := m.p.Acknowledge("A", []AckBatch{{First: h[0], Last: h[1], Types: []AckType{AckAccept}}}, m.now)
			if err != nil {
				m.t.Fatalf("drain ack: %v", err)
			}
			for off := h[0]; off <= h[1]; off++ {
				m.recs[off].holder, m.recs[off].done = "", true
			}
			m.persist(rec)
		}
		if m.p.StartOffset() >= end {
			break
		}
	}
	for off, r := range m.recs {
		if r.kind == kindRecord && !r.done {
			m.t.Fatalf("offset %d never done after the drain (SPSO %d, log end %d)", off, m.p.StartOffset(), m.log.end)
		}
	}
	if m.p.StartOffset() != end {
		m.t.Fatalf("SPSO %d after the drain, last batch ends at %d", m.p.StartOffset(), end-1)
	}
}

func TestPartitionProperties(t *testing.T) {
	seeds, ops := 300, 250
	if testing.Short() {
		seeds = 50
	}
	for _, lossy := range []bool{false, true} {
		t.Run(fmt.Sprint("lossy=", lossy), func(t *testing.T) { partitionProperties(t, seeds, ops, lossy) })
	}
}

func partitionProperties(t *testing.T, seeds, ops int, lossy bool) {
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		cfg := Config{
			LockDuration:       30 * time.Second,
			DeliveryCountLimit: int16(2 + rng.IntN(5)),
			MaxRecordLocks:     int32(10 + rng.IntN(60)),
		}
		m := &propModel{t: t, rng: rng, cfg: cfg, now: testStart, lossy: lossy}
		m.p = New(cfg, 0)
		m.persist(m.p.Snapshot())
		ok := t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			m.t = t
			for range ops {
				switch k := rng.IntN(100); {
				case k < 15:
					m.produce()
				case k < 45:
					mode := BatchOptimized
					if rng.IntN(2) == 0 {
						mode = RecordLimit
					}
					m.acquire(propMembers[rng.IntN(3)], int32(1+rng.IntN(30)), mode, rng.IntN(4))
				case k < 75:
					m.ack(propMembers[rng.IntN(3)])
				case k < 85:
					m.now = m.now.Add(time.Duration(rng.IntN(40)) * time.Second)
					m.normalise()
					m.persist(m.p.Expire(m.now))
				case k < 90:
					m.leave(propMembers[rng.IntN(3)])
				case k < 95:
					m.restart()
				case k < 97:
					m.store = m.store[:0]
					m.persist(m.p.Snapshot())
				default:
					m.now = m.now.Add(time.Duration(rng.IntN(40)) * time.Second)
				}
				m.check()
			}
			m.drain()
		})
		if !ok {
			break
		}
	}
}
