package share

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// RecordState is the delivery state of an offset of a share partition. The
// values are Kafka's (they are what WriteShareGroupState stores as
// DeliveryState).
type RecordState int8

const (
	// Available records may be acquired: never delivered, released, or
	// their lock expired.
	Available RecordState = 0
	// Acquired records are locked to one member until a deadline.
	Acquired RecordState = 1
	// Acknowledged records were accepted; they are never delivered again.
	Acknowledged RecordState = 2
	// Archived records were rejected, reached the delivery count limit,
	// or are not records at all (gaps, aborted transactional data); they
	// are never delivered again.
	Archived RecordState = 4
)

func (s RecordState) terminal() bool { return s == Acknowledged || s == Archived }

func (s RecordState) valid() bool {
	return s == Available || s == Acquired || s == Acknowledged || s == Archived
}

func (s RecordState) String() string {
	switch s {
	case Available:
		return "available"
	case Acquired:
		return "acquired"
	case Acknowledged:
		return "acknowledged"
	case Archived:
		return "archived"
	}
	return fmt.Sprintf("RecordState(%d)", int8(s))
}

// run is a stretch of consecutive offsets in the same state. A partition's
// runs cover [start, next) exactly, in order, without holes: every offset
// between the start offset and the end offset has a state.
type run struct {
	first, last int64
	// deadline is when an acquired run's lock expires, in UnixNano.
	deadline int64
	// member holds an acquired run; empty otherwise.
	member string
	count  int16 // delivery count
	state  RecordState
}

func (r *run) sameAs(o *run) bool {
	return r.state == o.state && r.count == o.count && r.member == o.member && r.deadline == o.deadline
}

// Partition is the share-partition state machine of one (group, topic,
// partition): the share-partition start offset (SPSO), the end offset
// (SPEO) and the state of every offset between them.
//
// A Partition has no lock. One goroutine owns it and makes every call;
// see the package documentation for how the broker drives it. Time is
// passed in (now) on every call that needs it: the Partition never reads
// a clock.
type Partition struct {
	cfg Config
	// start is the SPSO: every offset below it is acknowledged or
	// archived (or was skipped when the partition was initialised).
	start int64
	// next is one past the SPEO: the first offset never tracked.
	next int64
	runs []run

	stateEpoch  int32
	leaderEpoch int32

	stats counters

	// touched collects the offsets the operation in progress changed
	// durably; moved records whether it moved the start offset.
	touched []interval
	moved   bool
	// scratch is reused by ackOffsets.
	scratch []run
}

// New returns a partition that has never delivered anything, starting at
// startOffset (see InitialStartOffset). The owner must persist its
// Snapshot before serving fetches, so that a restart does not resolve the
// start offset again.
func New(cfg Config, startOffset int64) *Partition {
	if startOffset < 0 {
		startOffset = 0
	}
	return &Partition{cfg: cfg.withDefaults(), start: startOffset, next: startOffset}
}

// Config returns the partition's limits, defaults applied.
func (p *Partition) Config() Config { return p.cfg }

// SetConfig changes the limits. Locks already held keep their deadline; a
// lower delivery count limit applies when a delivery attempt ends (KIP-1240).
func (p *Partition) SetConfig(cfg Config) { p.cfg = cfg.withDefaults() }

// SetLeaderEpoch records the partition leader epoch written into state
// records, so that a store can refuse records from a deposed leader.
func (p *Partition) SetLeaderEpoch(e int32) { p.leaderEpoch = e }

// StartOffset is the SPSO.
func (p *Partition) StartOffset() int64 { return p.start }

// EndOffset is the SPEO: the highest offset tracked, StartOffset()-1 when
// nothing is in flight.
func (p *Partition) EndOffset() int64 { return p.next - 1 }

// InFlight is the number of offsets between the SPSO and the SPEO.
func (p *Partition) InFlight() int64 { return p.next - p.start }

// StateEpoch is bumped by Reset (AlterShareGroupOffsets); state records of
// an older epoch are ignored by Restore.
func (p *Partition) StateEpoch() int32 { return p.stateEpoch }

// NextFetchOffset is where the owner should read the log from for the next
// acquisition at now: the first offset in flight that is available or
// whose lock has expired by now, or the offset after the SPEO.
func (p *Partition) NextFetchOffset(now time.Time) int64 {
	nowN := now.UnixNano()
	for i := range p.runs {
		r := &p.runs[i]
		if r.state == Available || (r.state == Acquired && r.deadline <= nowN) {
			return r.first
		}
	}
	return p.next
}

// CanAcquire reports whether an acquisition at now could hand out anything
// given enough records in the log: some offset in flight is available (or
// its lock expired), or the in-flight window has room. A ShareFetch
// waiting in purgatory on a partition that cannot acquire must be woken
// by an acknowledgement, a release or a lock expiry, not only by new
// records.
func (p *Partition) CanAcquire(now time.Time) bool {
	return p.NextFetchOffset(now) < p.next || p.InFlight() < int64(p.cfg.MaxRecordLocks)
}

// NextDeadline is the earliest lock deadline, if any record is acquired:
// the owner should call Expire then.
func (p *Partition) NextDeadline() (time.Time, bool) {
	var min int64
	found := false
	for i := range p.runs {
		r := &p.runs[i]
		if r.state == Acquired && (!found || r.deadline < min) {
			min, found = r.deadline, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return time.Unix(0, min), true
}

// index returns the index of the run holding off, which must be in
// [start, next).
func (p *Partition) index(off int64) int {
	return sort.Search(len(p.runs), func(i int) bool { return p.runs[i].last >= off })
}

// cut makes off the first offset of a run and returns that run's index;
// len(p.runs) if off is at or past next.
func (p *Partition) cut(off int64) int {
	if off >= p.next {
		return len(p.runs)
	}
	if off <= p.start {
		return 0
	}
	i := p.index(off)
	if p.runs[i].first == off {
		return i
	}
	right := p.runs[i]
	right.first = off
	p.runs[i].last = off - 1
	p.runs = slices.Insert(p.runs, i+1, right)
	return i + 1
}

// span returns the runs [i, j) covering exactly [first, last], which must
// lie inside the window.
func (p *Partition) span(first, last int64) (i, j int) {
	i = p.cut(first)
	j = p.cut(last + 1)
	return i, j
}

// appendRun extends the window with r, which must start at next; it
// lengthens the last run instead when r is in the same state.
func (p *Partition) appendRun(r run) {
	if r.first != p.next {
		panic(fmt.Sprintf("share: run %d-%d appended at end offset %d", r.first, r.last, p.next-1))
	}
	p.next = r.last + 1
	if n := len(p.runs); n > 0 && p.runs[n-1].sameAs(&r) {
		p.runs[n-1].last = r.last
		return
	}
	p.runs = append(p.runs, r)
}

// coalesce merges neighbouring runs in the same state.
func (p *Partition) coalesce() {
	if len(p.runs) < 2 {
		return
	}
	w := 0
	for i := 1; i < len(p.runs); i++ {
		if p.runs[w].sameAs(&p.runs[i]) {
			p.runs[w].last = p.runs[i].last
			continue
		}
		w++
		p.runs[w] = p.runs[i]
	}
	clear(p.runs[w+1:])
	p.runs = p.runs[:w+1]
}

// advance moves the SPSO over the acknowledged and archived prefix.
func (p *Partition) advance() {
	k := 0
	for k < len(p.runs) && p.runs[k].state.terminal() {
		k++
	}
	if k == 0 {
		return
	}
	if k == len(p.runs) {
		p.moveStart(p.next)
		return
	}
	p.moveStart(p.runs[k].first)
}

// moveStart sets the SPSO to off (never backwards), dropping what is below
// it whatever its state. The window grows to off if it ended before.
func (p *Partition) moveStart(off int64) {
	if off <= p.start {
		return
	}
	k := sort.Search(len(p.runs), func(i int) bool { return p.runs[i].last >= off })
	if k < len(p.runs) && p.runs[k].first < off {
		p.runs[k].first = off
	}
	p.runs = slices.Delete(p.runs, 0, k)
	p.start = off
	if p.next < off {
		p.next = off
	}
	p.moved = true
}

// touch records that [first, last] changed durably in the operation in
// progress.
func (p *Partition) touch(first, last int64) {
	if n := len(p.touched); n > 0 && p.touched[n-1].last+1 >= first && p.touched[n-1].first <= first {
		p.touched[n-1].last = max(p.touched[n-1].last, last)
		return
	}
	p.touched = append(p.touched, interval{first, last})
}

// interval is an inclusive offset range.
type interval struct{ first, last int64 }

// finish ends an operation: it merges runs, moves the SPSO and returns the
// durable change, the final state of every offset the operation touched
// (the zero StateRecord when nothing durable changed).
func (p *Partition) finish() StateRecord {
	p.coalesce()
	p.advance()
	if len(p.touched) == 0 && !p.moved {
		return StateRecord{}
	}
	rec := StateRecord{
		Kind:        Delta,
		StateEpoch:  p.stateEpoch,
		LeaderEpoch: p.leaderEpoch,
		StartOffset: p.start,
	}
	ivs := mergeIntervals(p.touched)
	for _, iv := range ivs {
		lo, hi := max(iv.first, p.start), min(iv.last, p.next-1)
		if lo > hi {
			continue
		}
		for k := p.index(lo); k < len(p.runs) && p.runs[k].first <= hi; k++ {
			r := &p.runs[k]
			rec.Batches = appendBatch(rec.Batches, StateBatch{First: max(r.first, lo), Last: min(r.last, hi), State: r.state, DeliveryCount: r.count})
		}
	}
	p.touched = p.touched[:0]
	p.moved = false
	return rec
}

// appendBatch appends b, merging it into the last batch when it continues
// it in the same state.
func appendBatch(bs []StateBatch, b StateBatch) []StateBatch {
	if n := len(bs); n > 0 {
		prev := &bs[n-1]
		if prev.Last+1 == b.First && prev.State == b.State && prev.DeliveryCount == b.DeliveryCount {
			prev.Last = b.Last
			return bs
		}
	}
	return append(bs, b)
}

// mergeIntervals sorts ivs in place and merges overlapping or adjacent
// ones.
func mergeIntervals(ivs []interval) []interval {
	sorted := true
	for i := 1; i < len(ivs); i++ {
		if ivs[i].first <= ivs[i-1].last+1 {
			sorted = false
			break
		}
	}
	if sorted {
		return ivs
	}
	slices.SortFunc(ivs, func(a, b interval) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	w := 0
	for i := 1; i < len(ivs); i++ {
		if ivs[i].first <= ivs[w].last+1 {
			ivs[w].last = max(ivs[w].last, ivs[i].last)
			continue
		}
		w++
		ivs[w] = ivs[i]
	}
	return ivs[:w+1]
}

// overwrite sets [b.First, b.Last] (the part at or above start) to b's
// state and delivery count, growing the window if b ends past it. Offsets
// between the old end and b are made available with delivery count 0:
// nothing is known about them, so they will be fetched and judged again.
func (p *Partition) overwrite(b StateBatch) {
	first, last := max(b.First, p.start), b.Last
	if first > last {
		return
	}
	r := run{state: b.State, count: b.DeliveryCount}
	if first >= p.next {
		if first > p.next {
			p.appendRun(run{first: p.next, last: first - 1, state: Available})
		}
		r.first, r.last = first, last
		p.appendRun(r)
		return
	}
	inLast := min(last, p.next-1)
	i, j := p.span(first, inLast)
	r.first, r.last = first, inLast
	p.runs[i] = r
	p.runs = slices.Delete(p.runs, i+1, j)
	if last > inLast {
		r.first, r.last = inLast+1, last
		p.appendRun(r)
	}
}

// expire ends the locks whose deadline is at or before now: the records
// become available again, or archived if they reached the delivery count
// limit.
func (p *Partition) expire(now int64) {
	for i := range p.runs {
		r := &p.runs[i]
		if r.state != Acquired || r.deadline > now {
			continue
		}
		n := r.last - r.first + 1
		p.stats.lockExpiries += n
		p.releaseRun(r)
	}
}

// releaseRun ends an acquisition of r that was delivered: it is available
// again unless its delivery count reached the limit.
func (p *Partition) releaseRun(r *run) {
	r.member, r.deadline = "", 0
	if r.count >= p.cfg.DeliveryCountLimit {
		r.state = Archived
		p.stats.archived += r.last - r.first + 1
	} else {
		r.state = Available
	}
	p.touch(r.first, r.last)
}

// Expire ends the locks whose deadline is at or before now and returns the
// durable change.
func (p *Partition) Expire(now time.Time) StateRecord {
	p.expire(now.UnixNano())
	return p.finish()
}

// ReleaseMember hands back every record member holds, as Kafka does when a
// member's share session closes or it leaves the group: the records become
// available and their delivery count goes back down by one, since they are
// taken as never having reached the application. Locks that expired by now
// end as expiries first.
func (p *Partition) ReleaseMember(member string, now time.Time) StateRecord {
	p.expire(now.UnixNano())
	for i := range p.runs {
		r := &p.runs[i]
		if r.state != Acquired || r.member != member {
			continue
		}
		p.stats.released += r.last - r.first + 1
		r.state, r.member, r.deadline = Available, "", 0
		if r.count > 0 {
			r.count--
		}
		p.touch(r.first, r.last)
	}
	return p.finish()
}

// AdvanceLogStart moves the SPSO up to the log start offset after
// retention or DeleteRecords removed records below it. Whatever was in
// flight below it is forgotten; acknowledgements of those offsets are
// ignored as Kafka ignores them.
func (p *Partition) AdvanceLogStart(logStart int64) StateRecord {
	p.moveStart(logStart)
	return p.finish()
}

// Reset forgets all delivery state and restarts the partition at
// startOffset with a new state epoch (AlterShareGroupOffsets; the group
// must have no members). It returns the snapshot to persist.
func (p *Partition) Reset(startOffset int64) StateRecord {
	if startOffset < 0 {
		startOffset = 0
	}
	clear(p.runs)
	p.runs = p.runs[:0]
	p.start, p.next = startOffset, startOffset
	p.stateEpoch++
	p.touched, p.moved = p.touched[:0], false
	return p.Snapshot()
}

// Snapshot returns the whole durable state: the SPSO and every offset in
// flight with its state and delivery count. Restore from a snapshot and
// the deltas after it gives back the partition, acquired records made
// available again.
func (p *Partition) Snapshot() StateRecord {
	rec := StateRecord{
		Kind:        Snapshot,
		StateEpoch:  p.stateEpoch,
		LeaderEpoch: p.leaderEpoch,
		StartOffset: p.start,
		Batches:     make([]StateBatch, 0, len(p.runs)),
	}
	for i := range p.runs {
		r := &p.runs[i]
		if n := len(rec.Batches); n > 0 {
			prev := &rec.Batches[n-1]
			if prev.State == r.state && prev.DeliveryCount == r.count {
				prev.Last = r.last
				continue
			}
		}
		rec.Batches = append(rec.Batches, StateBatch{First: r.first, Last: r.last, State: r.state, DeliveryCount: r.count})
	}
	return rec
}
