package fetchsession

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// The session ids and epochs the protocol reserves (Kafka's FetchMetadata).
const (
	// InvalidID is no session: a request naming it opens none or asks
	// for a new one; a response carrying it holds none.
	InvalidID int32 = 0
	// InitialEpoch asks for a full fetch that opens a session.
	InitialEpoch int32 = 0
	// FinalEpoch asks for a full fetch without a session (and closes the
	// one named).
	FinalEpoch int32 = -1
)

// NextEpoch is the epoch that follows e: FinalEpoch stays final, and the
// largest epoch wraps to 1 (0 is the initial one).
func NextEpoch(e int32) int32 {
	switch {
	case e < 0:
		return FinalEpoch
	case e == math.MaxInt32:
		return 1
	default:
		return e + 1
	}
}

// TopicRef names a topic in a session: by id in sessions of Fetch v13
// and later (Name empty), by name before (ID zero).
type TopicRef struct {
	ID   [16]byte
	Name string
}

// PartitionData is what a fetcher asks of one partition: the request
// fields a session keeps so that an incremental request may leave the
// partition out.
type PartitionData struct {
	FetchOffset int64
	// LogStartOffset is the fetcher's own log start offset (followers);
	// -1 for consumers.
	LogStartOffset   int64
	MaxBytes         int32
	LeaderEpoch      int32 // CurrentLeaderEpoch; -1 when not given
	LastFetchedEpoch int32 // -1 when not given
}

// Session is the partitions one fetcher reads from this broker, with
// what the last response told it of each (Kafka's FetchSession with its
// CachedPartitions). A cached session lives in the Cache between
// requests; a sessionless request, and a full one the cache had no room
// for, use a Session of their own for the length of the request.
//
// Beyond Kafka's session, every entry is watched: its partition marks
// it when it changes, and a request reads only the marked entries and
// those the request itself names. A partition that did not change since
// the last response costs an incremental request nothing.
type Session struct {
	id         int32
	replica    int32 // the follower's broker id; -1 for a consumer
	privileged bool
	usesIDs    bool
	created    time.Time

	// Guarded by the Cache's mu.
	lastUsed     time.Time
	cachedSize   int  // size as of the last touch
	evictableAll bool // as of the last touch: older than the eviction age
	evictablePri bool // as of the last touch: evictable by a privileged session
	inCache      bool
	used         atomic.Int64 // lastUsed in Unix nanoseconds, for LastUsed

	// mu guards everything below but the queue. A request holds it only
	// while it changes or copies entries, never while it reads a
	// partition or waits.
	mu       sync.Mutex
	epoch    int32 // the epoch the next incremental request must carry
	topics   []TopicRef
	topicAt  map[TopicRef]int32
	index    slotIndex // entries by (topic, partition)
	entries  []entry
	free     []int32 // indexes of removed entries, for reuse
	exts     []entryExt
	extFree  []int32 // indexes of exts let go, for reuse
	blank    blank
	size     int
	gen      uint32   // bumped by every request admitted
	read     []uint64 // bit per entry: read by the request of gen
	readGen  uint32   // the request read marks
	watching bool     // every bound entry is in its partition's marks

	// qmu guards the queue of marked entries; a leaf.
	qmu    sync.Mutex
	queue  []int32
	queued []uint64 // bit per entry: in queue
	c      chan struct{}
}

// entry is one partition of a session (24 bytes: sessions of followers
// hold one per partition they follow). A partition never written is
// fetched at offset 0 with no last fetched epoch and answered a high
// watermark and log start offset of 0: while that is all it holds, its
// data is the session's blank one with its own leader epoch, and the
// entry needs nothing more. Anything else (a fetch offset past 0, other
// answers, an error) gives it an entryExt of its own, in s.exts, kept
// until the entry is removed.
type entry struct {
	topic     int32 // index in topics; -1 for a free slot
	partition int32
	epoch     int32 // the LeaderEpoch asked, while ext <= 0
	// ext > 0: s.exts[ext-1] holds the data and answers; extNone:
	// nothing answered yet (high watermark and log start -1); extZero:
	// a high watermark and log start of 0 answered.
	ext int32
	src *Source
}

// The answers an entry without an entryExt holds.
const (
	extNone int32 = 0
	extZero int32 = -1
)

// entryExt is what an entry holds once its partition is more than
// blank: what the fetcher asked last and what the session last answered.
type entryExt struct {
	data     PartitionData
	hw       int64 // high watermark last answered; -1 after an error
	logStart int64 // this broker's log start offset last answered
}

func (e *entry) used() bool { return e.topic >= 0 }

// data is what e's fetcher asked last. mu held.
func (s *Session) data(e *entry) PartitionData {
	if e.ext > 0 {
		return s.exts[e.ext-1].data
	}
	return s.blank.with(e.epoch)
}

// blank is what the fetcher of a never-written partition asks: offset
// 0, no last fetched epoch, and the log start offset and maximum bytes
// of the first such partition its holder (a Session, a Client) saw. Only
// the leader epoch differs from one such partition to the next, so an
// entry holding that much holds all its data.
type blank struct {
	d   PartitionData // LeaderEpoch unused
	set bool
}

// is reports whether d is blank but for its leader epoch.
func (b *blank) is(d PartitionData) bool {
	if d.FetchOffset != 0 || d.LastFetchedEpoch != -1 {
		return false
	}
	if !b.set {
		b.d, b.set = PartitionData{LogStartOffset: d.LogStartOffset, MaxBytes: d.MaxBytes, LastFetchedEpoch: -1}, true
	}
	return d.LogStartOffset == b.d.LogStartOffset && d.MaxBytes == b.d.MaxBytes
}

// with is the blank data with leader epoch epoch.
func (b *blank) with(epoch int32) PartitionData {
	d := b.d
	d.LeaderEpoch = epoch
	return d
}

// setData records d as what e's fetcher asks. mu held.
func (s *Session) setData(e *entry, d PartitionData) {
	switch {
	case e.ext > 0:
		s.exts[e.ext-1].data = d
	case s.blank.is(d):
		e.epoch = d.LeaderEpoch
	default:
		hw, logStart := s.answered(e)
		s.extend(e, entryExt{data: d, hw: hw, logStart: logStart})
	}
}

// answered is the high watermark and log start offset last answered for
// e. mu held.
func (s *Session) answered(e *entry) (hw, logStart int64) {
	switch {
	case e.ext > 0:
		x := &s.exts[e.ext-1]
		return x.hw, x.logStart
	case e.ext == extZero:
		return 0, 0
	default:
		return -1, -1
	}
}

// setAnswered records what the session answered for e. mu held.
func (s *Session) setAnswered(e *entry, hw, logStart int64) {
	switch {
	case e.ext > 0:
		x := &s.exts[e.ext-1]
		x.hw, x.logStart = hw, logStart
	case hw == -1 && logStart == -1:
		e.ext = extNone
	case hw == 0 && logStart == 0:
		e.ext = extZero
	default:
		s.extend(e, entryExt{data: s.data(e), hw: hw, logStart: logStart})
	}
}

// extend gives e (which has none) an entryExt holding x. mu held.
func (s *Session) extend(e *entry, x entryExt) {
	if n := len(s.extFree); n > 0 {
		i := s.extFree[n-1]
		s.extFree = s.extFree[:n-1]
		s.exts[i] = x
		e.ext = i + 1
		return
	}
	s.exts = append(s.exts, x)
	e.ext = int32(len(s.exts))
}

// release frees e's entryExt, if it has one. mu held.
func (s *Session) release(e *entry) {
	if e.ext <= 0 {
		return
	}
	s.exts[e.ext-1] = entryExt{}
	s.extFree = append(s.extFree, e.ext-1)
	e.ext = extNone
	if len(s.extFree) == len(s.exts) {
		s.exts, s.extFree = nil, nil
	}
}

func newSession(replica int32, usesIDs bool, now time.Time) *Session {
	s := &Session{
		replica: replica, privileged: replica >= 0, usesIDs: usesIDs, created: now, lastUsed: now,
		topicAt: map[TopicRef]int32{}, c: make(chan struct{}, 1), cachedSize: -1,
	}
	s.used.Store(now.UnixNano())
	return s
}

// Replica is the follower's broker id for a follower's session, -1 for a
// consumer's.
func (s *Session) Replica() int32 { return s.replica }

// LastUsed is when the session's last request was admitted. While a
// partition is in a follower's session and not named, each request of
// the session says the follower is still at the offset it last named:
// the leader uses this to know a follower was caught up on an idle
// partition without reading it.
func (s *Session) LastUsed() time.Time { return time.Unix(0, s.used.Load()) }

// ID is the session's id; InvalidID for a session not in the cache.
func (s *Session) ID() int32 { return s.id }

// Size is the number of partitions in the session.
func (s *Session) Size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// at is the (topic, partition) of entry i, for the index. mu held.
func (s *Session) at(i int32) (int32, int32) {
	e := &s.entries[i]
	return e.topic, e.partition
}

// find returns the index of (topic, partition), or -1. mu held.
func (s *Session) find(ref TopicRef, partition int32) int32 {
	ti, ok := s.topicAt[ref]
	if !ok {
		return -1
	}
	return s.index.find(ti, partition, s.at)
}

// put adds or updates (topic, partition) with d, queues it for reading,
// and reports whether it was added. mu held.
func (s *Session) put(ref TopicRef, partition int32, d PartitionData) (int32, bool) {
	if i := s.find(ref, partition); i >= 0 {
		s.setData(&s.entries[i], d)
		s.mark(i)
		return i, false
	}
	ti, ok := s.topicAt[ref]
	if !ok {
		ti = int32(len(s.topics))
		s.topics = append(s.topics, ref)
		s.topicAt[ref] = ti
	}
	var i int32
	e := entry{topic: ti, partition: partition}
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
		s.entries[i] = e
	} else {
		i = int32(len(s.entries))
		if len(s.entries) == cap(s.entries) {
			// Grow by an eighth, not double: a follower's session holds
			// tens of thousands of partitions and gains them a few at a
			// time.
			grown := make([]entry, len(s.entries), len(s.entries)+max(16, len(s.entries)/8))
			copy(grown, s.entries)
			s.entries = grown
		}
		s.entries = append(s.entries, e)
		if need := len(s.entries)/64 + 1; len(s.read) < need {
			s.read = append(s.read, make([]uint64, need-len(s.read))...)
		}
		s.qmu.Lock()
		if need := len(s.entries)/64 + 1; len(s.queued) < need {
			s.queued = append(s.queued, make([]uint64, need-len(s.queued))...)
		}
		s.qmu.Unlock()
	}
	s.setData(&s.entries[i], d)
	s.index.insert(i, ti, partition, s.at)
	s.size++
	s.mark(i)
	return i, true
}

// remove drops (topic, partition) and reports whether it was there. mu
// held.
func (s *Session) remove(ref TopicRef, partition int32) bool {
	i := s.find(ref, partition)
	if i < 0 {
		return false
	}
	e := &s.entries[i]
	if e.src != nil && s.watching {
		e.src.Unwatch(Mark{s, i})
	}
	s.index.remove(i, e.topic, partition, s.at)
	s.release(e)
	*e = entry{topic: -1}
	s.free = append(s.free, i)
	s.size--
	return true
}

// mark queues entry i unless it is queued already, and wakes a parked
// request. It takes only qmu.
func (s *Session) mark(i int32) {
	s.qmu.Lock()
	w, bit := i/64, uint64(1)<<(i%64)
	if int(w) < len(s.queued) && s.queued[w]&bit == 0 {
		s.queued[w] |= bit
		s.queue = append(s.queue, i)
	}
	s.qmu.Unlock()
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// drain takes the queued entries, oldest first. mu held.
func (s *Session) drain() []int32 {
	s.qmu.Lock()
	q := s.queue
	s.queue = nil
	for _, i := range q {
		s.queued[i/64] &^= 1 << (i % 64)
	}
	s.qmu.Unlock()
	return q
}

// watch puts every bound entry in its partition's marks. mu held.
func (s *Session) watch() {
	if s.watching {
		return
	}
	s.watching = true
	for i := range s.entries {
		if e := &s.entries[i]; e.used() && e.src != nil {
			e.src.Watch(Mark{s, int32(i)})
		}
	}
}

// unwatch takes every entry out of its partition's marks. mu held.
func (s *Session) unwatch() {
	if !s.watching {
		return
	}
	s.watching = false
	for i := range s.entries {
		if e := &s.entries[i]; e.used() && e.src != nil {
			e.src.Unwatch(Mark{s, int32(i)})
		}
	}
}

// bind records the partition entry i reads, moving its mark when the
// partition changed (the registry replaced it, or a request named a
// partition new to the session). A watched session queues the entry to
// be read again: src marks it only from now on, and a change between
// the read and now would otherwise go unread until something else
// changes (the fetcher, told there was nothing new, does not name it
// again). mu held.
func (s *Session) bind(i int32, src *Source) {
	e := &s.entries[i]
	if !e.used() || e.src == src {
		return
	}
	if s.watching {
		if e.src != nil {
			e.src.Unwatch(Mark{s, i})
		}
		if src != nil {
			src.Watch(Mark{s, i})
			s.mark(i)
		}
	}
	e.src = src
}

// markRead records that the request of gen read entry i, and reports
// whether it is the first time. mu held.
func (s *Session) markRead(gen uint32, i int32) bool {
	if s.readGen != gen {
		clear(s.read)
		s.readGen = gen
	}
	w, bit := i/64, uint64(1)<<(i%64)
	if s.read[w]&bit != 0 {
		return false
	}
	s.read[w] |= bit
	return true
}

// wasRead reports whether the request of gen read entry i. mu held.
func (s *Session) wasRead(gen uint32, i int32) bool {
	return s.readGen == gen && s.read[i/64]&(uint64(1)<<(i%64)) != 0
}

// mustRespond is Kafka's rule for whether an incremental response
// carries e's partition, applied to what a read found, and remembers
// what the response tells the fetcher. mu held.
func (s *Session) mustRespond(e *entry, o Outcome) bool {
	hw, logStart := s.answered(e)
	must := o.Bytes > 0 || o.Diverging || hw != o.HighWatermark || logStart != o.LogStartOffset ||
		// Errors go out every time; a high watermark of -1 makes the
		// partition go out once more when the error clears.
		o.ErrorCode != 0
	hw = o.HighWatermark
	if o.ErrorCode != 0 {
		hw = -1
	}
	s.setAnswered(e, hw, o.LogStartOffset)
	return must
}
