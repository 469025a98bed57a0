package fetchsession

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Fetch is one admitted request's use of its session. The broker reads
// what Pending hands it, Binds what it read, parks on Wait while the
// answer is too small, reads Pending again when woken, and Finishes:
//
//	f, code := cache.Begin(req, followerID, now)
//	reads := f.Pending(nil)   // read each, note each outcome
//	f.Bind(reads)
//	for not enough { <-f.Wait(); reads = f.Pending(reads[:0]); ...; f.Bind(reads) }
//	res := f.Finish(now, outcomeOf)
//
// Pending hands out only what may have changed: on the first call every
// partition of a sessionless or full request, or, for an incremental
// one, the partitions it names and those marked since the last
// response; later calls, the partitions marked since. A Fetch is used by
// one goroutine.
type Fetch struct {
	c     *Cache
	s     *Session
	kind  Kind
	epoch int32  // incremental: the session's next epoch after admission
	gen   uint32 // the session's request generation at admission
	read  []int32
}

// Read is one partition to read now: its place in the session, its
// names and what the fetcher asked, and the partition it was bound to
// last (nil if never).
type Read struct {
	Index     int32
	Topic     TopicRef
	Partition int32
	PartitionData
	Src *Source
}

// Outcome is what a read of a partition found, as far as the session
// cares.
type Outcome struct {
	HighWatermark  int64
	LogStartOffset int64
	Bytes          int64 // record bytes the answer carries
	ErrorCode      int16
	Diverging      bool // a follower's DivergingEpoch
	// More is set when the partition has records past what the answer
	// carries (the request's byte budget ran out): it is read again next
	// time even if nothing changes.
	More bool
}

// Kind is how the request was admitted.
func (f *Fetch) Kind() Kind { return f.kind }

// Session is the request's session.
func (f *Fetch) Session() *Session { return f.s }

// Pending appends to dst the partitions to read now, oldest mark first.
func (f *Fetch) Pending(dst []Read) []Read {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(dst)
	defer func() { f.c.counts[f.kind].read.Add(uint64(len(dst) - n)) }()
	for _, i := range s.drain() {
		e := &s.entries[i]
		if !e.used() {
			continue
		}
		if s.markRead(f.gen, i) {
			f.read = append(f.read, i)
		}
		dst = append(dst, Read{Index: i, Topic: s.topics[e.topic], Partition: e.partition, PartitionData: s.data(e), Src: e.src})
	}
	return dst
}

// Bind records the partition each read went to (its Src), so that the
// session watches it.
func (f *Fetch) Bind(reads []Read) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range reads {
		if int(r.Index) < len(s.entries) {
			s.bind(r.Index, r.Src)
		}
	}
}

// Wait returns the channel that receives when a partition of the session
// is marked. The first call puts the session's partitions in their
// marks if they were not (a cached session always is). For a full
// request it then queues again what the request read before: a change
// between that read and the watch marked nothing, and the session this
// request opens would never read the partition again for it (a
// follower's first fetch after a leader change missed the append an
// acks=all produce was waiting on). A sessionless request is not
// requeued: what it misses only makes it wait its MaxWait, and its
// client's next request reads every partition anyway.
func (f *Fetch) Wait() <-chan struct{} {
	s := f.s
	s.mu.Lock()
	f.watch()
	s.mu.Unlock()
	return s.c
}

// watch puts the session's partitions in their marks if they were not,
// and for a full request queues again what it read: a change between a
// read and the watch marked nothing. A parked request (Wait) reads them
// again at once; one answered without parking leaves them to the next
// request of the session it opens (Finish). s.mu held.
func (f *Fetch) watch() {
	s := f.s
	if s.watching {
		return
	}
	s.watch()
	if f.kind == Full {
		for _, i := range f.read {
			s.mark(i)
		}
	}
}

// Included is a partition the answer carries, at Index in the session.
type Included struct {
	Index     int32
	Topic     TopicRef
	Partition int32
}

// Result is how to answer: the response's session id and error code, and
// the partitions it carries, in order.
type Result struct {
	SessionID int32
	ErrorCode int16
	Include   []Included
}

// Finish decides the answer from each read partition's outcome (called
// with the Index of every partition Pending handed out). A full request
// opens its session here (Kafka does so when it answers, with the
// answered high watermarks and log start offsets); an incremental one
// carries only the partitions Kafka's rule says must go, and answers
// INVALID_FETCH_SESSION_EPOCH when a newer request of the session was
// admitted meanwhile. Partitions whose answer carried records, an error
// or a divergence, or that had more than their budget, are queued to be
// read by the next request; so is every partition a full request that
// never parked read (its session watches them only from here on).
func (f *Fetch) Finish(now time.Time, outcome func(index int32) Outcome) Result {
	s := f.s
	switch f.kind {
	case Incremental:
		return f.finishIncremental(outcome)
	case Full:
		s.mu.Lock()
		res := f.all(outcome, true)
		evicted, cached := f.c.insert(s, now)
		if cached {
			res.SessionID = s.id
			// Answered without parking, the partitions are watched only
			// from now on: the next request reads again what this one
			// read. Else a partition appended to between its read and
			// now is never read for this session while the fetcher, told
			// it has nothing new, never names it again (a follower's
			// full fetch after its restart, answered at once, missed the
			// append an acks=all produce waited on and kept the follower
			// in the ISR without it for replica.lag.time.max.ms).
			f.watch()
		} else {
			s.unwatch()
		}
		s.mu.Unlock()
		if evicted != nil {
			evicted.mu.Lock()
			evicted.unwatch()
			evicted.mu.Unlock()
		}
		f.c.counts[Full].answered.Add(uint64(len(res.Include)))
		return res
	default:
		s.mu.Lock()
		res := f.all(outcome, false)
		s.unwatch()
		s.mu.Unlock()
		f.c.counts[Sessionless].answered.Add(uint64(len(res.Include)))
		return res
	}
}

// all answers every partition, in the session's order (the request's).
// With remember, each entry keeps what it answered, as a new session's
// starting point. s.mu held.
func (f *Fetch) all(outcome func(int32) Outcome, remember bool) Result {
	s := f.s
	res := Result{Include: make([]Included, 0, s.size)}
	for i := range s.entries {
		e := &s.entries[i]
		if !e.used() {
			continue
		}
		res.Include = append(res.Include, Included{Index: int32(i), Topic: s.topics[e.topic], Partition: e.partition})
		if remember && s.wasRead(f.gen, int32(i)) {
			s.mustRespond(e, outcome(int32(i)))
		}
	}
	if remember {
		f.requeue(outcome)
	}
	return res
}

// requeue queues what the next request must read though nothing marks
// it: first the partitions that had records but got none (the budget ran
// out before them), errors and divergences, then those that got records,
// so that busy partitions take turns with the budget (Kafka moves a
// partition that returned records to the end of its session). s.mu held.
func (f *Fetch) requeue(outcome func(int32) Outcome) {
	s := f.s
	for pass := range 2 {
		for _, i := range f.read {
			if !s.entries[i].used() {
				continue
			}
			if o := outcome(i); again(o) && (o.Bytes > 0) == (pass == 1) {
				s.mark(i)
			}
		}
	}
}

func (f *Fetch) finishIncremental(outcome func(int32) Outcome) Result {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != f.epoch {
		// A newer request of this session was admitted: this one is a
		// duplicate; what it read is left for the newer one.
		for _, i := range f.read {
			if s.entries[i].used() {
				s.mark(i)
			}
		}
		return Result{SessionID: s.id, ErrorCode: kerr.InvalidFetchSessionEpoch.Code}
	}
	res := Result{SessionID: s.id}
	for _, i := range f.read {
		e := &s.entries[i]
		if !e.used() {
			continue
		}
		if s.mustRespond(e, outcome(i)) {
			res.Include = append(res.Include, Included{Index: i, Topic: s.topics[e.topic], Partition: e.partition})
		}
	}
	f.requeue(outcome)
	f.c.counts[Incremental].answered.Add(uint64(len(res.Include)))
	return res
}

// again says whether a partition must be read by the next request even
// if nothing marks it: its answer changes the fetcher's position (or
// would, for an error that persists), or it has more than it got.
func again(o Outcome) bool {
	return o.Bytes > 0 || o.ErrorCode != 0 || o.Diverging || o.More
}

// Abandon ends a request that will not be answered (its connection
// went): what it read is left for the session's next request, and a
// session of its own stops watching its partitions.
func (f *Fetch) Abandon() {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.kind != Incremental {
		s.unwatch()
		return
	}
	for _, i := range f.read {
		if s.entries[i].used() {
			s.mark(i)
		}
	}
}

// Throttled ends a request answered without partitions (over a quota)
// and returns the session id the answer carries: the session is left as
// it was (what was read is read again next time); an incremental one
// keeps its id, a full one opens no session, as Kafka does.
func (f *Fetch) Throttled() int32 {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.kind != Incremental {
		s.unwatch()
		return InvalidID
	}
	for _, i := range f.read {
		if s.entries[i].used() {
			s.mark(i)
		}
	}
	return s.id
}
