package fetchsession

import (
	"math/bits"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Key names a partition to a Client: its topic, as the fetcher names it
// (a topic id, a name, or both), and its number.
type Key[T comparable] struct {
	Topic     T
	Partition int32
}

// Client is a fetcher's half of a session with one broker (Kafka's
// FetchSessionHandler): it knows what the broker's session holds, turns
// the partitions the fetcher wants into the next request's (all of
// them in a full request; in an incremental one only those whose data
// changed, and the ones to forget), and moves the session's id and
// epoch on from each answer. T names a topic; V is the fetcher's own
// state of a partition, kept here so that one table serves both.
//
// The fetcher calls Want with a partition's data whenever it changes
// (a new fetch offset after an answer, a new leader epoch), Pause to
// stop fetching one for a while (a back-off) and Delete to drop it.
// Nothing is done for a partition that did not change: an idle fetcher
// sends incremental requests that name nothing. Not safe for concurrent
// use.
//
// A follower's fetcher holds every partition it follows from one
// leader, so the entries are stored by value in chunks that never move
// (a *Partition stays valid until its partition is deleted), found
// through one slotIndex keyed by (topic, partition); a topic's ref is
// stored once.
type Client[T comparable, V any] struct {
	id    int32
	epoch int32 // the next request's; InitialEpoch asks for a full one

	topicAt    map[T]int32
	topics     []clientTopic[T]
	freeTopics []int32

	chunks   [][]Partition[V]
	n        int32   // slots handed out, used or free
	free     []int32 // freed slots, for reuse
	index    slotIndex
	blank    blank
	exts     []PartitionData // the data of partitions that are not blank
	extsFree []int32         // indexes of exts let go, for reuse

	live   int     // entries not gone
	wanted int     // entries wanted
	queue  []int32 // slots whose data the session may not hold
	forget []int32 // slots the session holds that are no longer wanted

	sessionless bool
}

type clientTopic[T comparable] struct {
	ref T
	n   int32 // slots of the topic in use
}

// Partition is one partition a Client knows of (32 bytes for a
// follower's, whose V is 16).
type Partition[V any] struct {
	Value V
	// The PartitionData the fetcher asks (Client.Data): once a request
	// names it, the session holds it (while fInSession), until Want
	// changes it and queues the partition again. A never-written
	// partition's is the Client's blank data with wantEpoch; any other's
	// is in Client.exts.
	wantEpoch int32
	topic     int32 // index in Client.topics
	partition int32
	// bits holds the flags in its low extShift bits and, above them,
	// the place in Client.exts of the data asked plus one (0: blank).
	bits uint32
}

// The flags of a Partition.
const (
	fUsed      uint32 = 1 << iota // the slot holds a partition
	fWanted                       // fetched, not paused
	fInSession                    // the broker's session holds the data asked
	fInQueue                      // in Client.queue
	fInForget                     // in Client.forget
	// fGone: deleted while the session holds it; freed once forgotten.
	fGone

	// extShift is where a Partition's place in Client.exts starts in
	// its bits: 2^26 partitions of a Client can be other than blank at
	// once, far past what one fetcher follows.
	extShift = iota
)

func (p *Partition[V]) has(f uint32) bool { return p.bits&f != 0 }

func (p *Partition[V]) set(f uint32, on bool) {
	if on {
		p.bits |= f
	} else {
		p.bits &^= f
	}
}

// ext is the partition's place in Client.exts plus one; 0 when blank.
func (p *Partition[V]) ext() uint32 { return p.bits >> extShift }

func (p *Partition[V]) setExt(x uint32) { p.bits = p.bits&(1<<extShift-1) | x<<extShift }

// Data is what the fetcher asks of p.
func (c *Client[T, V]) Data(p *Partition[V]) PartitionData {
	if x := p.ext(); x > 0 {
		return c.exts[x-1]
	}
	return c.blank.with(p.wantEpoch)
}

// setData records d as what the fetcher asks of p.
func (c *Client[T, V]) setData(p *Partition[V], d PartitionData) {
	switch x := p.ext(); {
	case x > 0:
		c.exts[x-1] = d
	case c.blank.is(d):
		p.wantEpoch = d.LeaderEpoch
	case len(c.extsFree) > 0:
		i := c.extsFree[len(c.extsFree)-1]
		c.extsFree = c.extsFree[:len(c.extsFree)-1]
		c.exts[i] = d
		p.setExt(uint32(i) + 1)
	default:
		c.exts = append(c.exts, d)
		p.setExt(uint32(len(c.exts)))
	}
}

// Wanted reports whether the partition is fetched (not paused).
func (p *Partition[V]) Wanted() bool { return p.has(fWanted) }

// NewClient returns a client with no session yet: its first request is
// full and asks for one.
func NewClient[T comparable, V any]() *Client[T, V] {
	return &Client[T, V]{topicAt: map[T]int32{}}
}

// SetSessionless turns sessions off (Fetch before v7, or a fetcher that
// does not want them): every request is full with epoch -1.
func (c *Client[T, V]) SetSessionless(off bool) {
	if off && !c.sessionless {
		c.id, c.epoch = InvalidID, InitialEpoch
	}
	c.sessionless = off
}

// Chunks hold 8, 8, 16, 32, 64 and 128 slots, then chunkMax each: a
// consumer's few partitions take little, and a fetcher of many wastes
// at most one chunk.
const chunkMax = 256

// slot returns slot i, which must have been handed out.
func (c *Client[T, V]) slot(i int32) *Partition[V] {
	switch {
	case i < 8:
		return &c.chunks[0][i]
	case i < chunkMax:
		ch := bits.Len32(uint32(i)) - 3
		return &c.chunks[ch][i-1<<(ch+2)]
	default:
		return &c.chunks[6+(i-chunkMax)/chunkMax][(i-chunkMax)%chunkMax]
	}
}

// newSlot hands out a slot (zeroed).
func (c *Client[T, V]) newSlot() int32 {
	if n := len(c.free); n > 0 {
		i := c.free[n-1]
		c.free = c.free[:n-1]
		return i
	}
	i := c.n
	if i == 0 || (i >= 8 && i < chunkMax && i&(i-1) == 0) || (i >= chunkMax && i%chunkMax == 0) {
		size := chunkMax
		switch {
		case i == 0:
			size = 8
		case i < chunkMax:
			size = int(i)
		}
		c.chunks = append(c.chunks, make([]Partition[V], size))
	}
	c.n++
	return i
}

// at is the (topic, partition) slot i holds, for the index.
func (c *Client[T, V]) at(i int32) (int32, int32) {
	p := c.slot(i)
	return p.topic, p.partition
}

// find returns the slot of k, or -1.
func (c *Client[T, V]) find(k Key[T]) int32 {
	ti, ok := c.topicAt[k.Topic]
	if !ok {
		return -1
	}
	return c.index.find(ti, k.Partition, c.at)
}

// alloc adds k with value v (paused) and returns its slot.
func (c *Client[T, V]) alloc(k Key[T], v V) int32 {
	ti, ok := c.topicAt[k.Topic]
	if !ok {
		if n := len(c.freeTopics); n > 0 {
			ti = c.freeTopics[n-1]
			c.freeTopics = c.freeTopics[:n-1]
		} else {
			ti = int32(len(c.topics))
			c.topics = append(c.topics, clientTopic[T]{})
		}
		c.topics[ti] = clientTopic[T]{ref: k.Topic}
		c.topicAt[k.Topic] = ti
	}
	c.topics[ti].n++
	i := c.newSlot()
	*c.slot(i) = Partition[V]{Value: v, topic: ti, partition: k.Partition, bits: fUsed}
	c.index.insert(i, ti, k.Partition, c.at)
	c.live++
	return i
}

// release frees slot i, which is neither live nor in the session.
func (c *Client[T, V]) release(i int32) {
	p := c.slot(i)
	c.index.remove(i, p.topic, p.partition, c.at)
	if x := p.ext(); x > 0 {
		c.exts[x-1] = PartitionData{}
		c.extsFree = append(c.extsFree, int32(x-1))
	}
	t := &c.topics[p.topic]
	if t.n--; t.n == 0 {
		delete(c.topicAt, t.ref)
		*t = clientTopic[T]{}
		c.freeTopics = append(c.freeTopics, p.topic)
	}
	*p = Partition[V]{}
	c.free = append(c.free, i)
	if c.index.n == 0 {
		// Empty: let the chunks go (the queues hold only stale slots).
		c.chunks, c.n, c.free = nil, 0, nil
		c.topics, c.freeTopics = nil, nil
		c.queue, c.forget = nil, nil
		c.exts, c.extsFree = nil, nil
	}
}

func (c *Client[T, V]) keyOf(p *Partition[V]) Key[T] {
	return Key[T]{c.topics[p.topic].ref, p.partition}
}

// get returns k's live slot, or -1.
func (c *Client[T, V]) get(k Key[T]) int32 {
	i := c.find(k)
	if i < 0 || c.slot(i).has(fGone) {
		return -1
	}
	return i
}

// Get returns the partition, or nil. The pointer stays valid until the
// partition is deleted.
func (c *Client[T, V]) Get(k Key[T]) *Partition[V] {
	if i := c.get(k); i >= 0 {
		return c.slot(i)
	}
	return nil
}

// Len is the number of partitions known (wanted or paused).
func (c *Client[T, V]) Len() int { return c.live }

// Wanted is the number of partitions fetched (known and not paused).
func (c *Client[T, V]) Wanted() int { return c.wanted }

// Range calls fn for every known partition until it returns false. fn
// must not add or delete partitions.
func (c *Client[T, V]) Range(fn func(Key[T], *Partition[V]) bool) {
	for i := range c.n {
		if p := c.slot(i); p.has(fUsed) && !p.has(fGone) && !fn(c.keyOf(p), p) {
			return
		}
	}
}

// Add returns the partition k, adding it (paused, with value v) when it
// is not known.
func (c *Client[T, V]) Add(k Key[T], v V) *Partition[V] {
	i := c.find(k)
	if i < 0 {
		return c.slot(c.alloc(k, v))
	}
	p := c.slot(i)
	if p.has(fGone) {
		// Deleted and added back before the session forgot it: a new
		// partition as far as the fetcher is concerned, the same entry
		// as far as the session is.
		p.Value = v
		p.set(fGone, false)
		c.live++
	}
	return p
}

// Want makes k fetched with d; the next request names it if the session
// may not hold d.
func (c *Client[T, V]) Want(k Key[T], d PartitionData) {
	i := c.get(k)
	if i < 0 {
		var zero V
		c.Add(k, zero)
		i = c.find(k)
	}
	p := c.slot(i)
	if !p.has(fWanted) {
		c.wanted++
	}
	changed := !p.has(fInSession) || c.Data(p) != d
	c.setData(p, d)
	p.set(fWanted, true)
	if changed && !p.has(fInQueue) {
		p.set(fInQueue, true)
		c.queue = append(c.queue, i)
	}
}

// Pause stops fetching k (its Value is kept); the next request forgets
// it.
func (c *Client[T, V]) Pause(k Key[T]) {
	if i := c.get(k); i >= 0 {
		c.pause(i)
	}
}

func (c *Client[T, V]) pause(i int32) {
	p := c.slot(i)
	if !p.has(fWanted) {
		return
	}
	p.set(fWanted, false)
	c.wanted--
	if p.has(fInSession) && !p.has(fInForget) {
		p.set(fInForget, true)
		c.forget = append(c.forget, i)
	}
}

// Delete drops k; the next request forgets it.
func (c *Client[T, V]) Delete(k Key[T]) {
	i := c.get(k)
	if i < 0 {
		return
	}
	c.pause(i)
	p := c.slot(i)
	var zero V
	p.Value = zero
	p.set(fGone, true)
	c.live--
	if !p.has(fInSession) {
		c.release(i)
	}
}

// Plan is the next request: its session id and epoch, and the
// partitions to name (with their data) and to forget. A full request
// names every wanted partition and forgets nothing.
type Plan[K comparable] struct {
	Full      bool
	SessionID int32
	Epoch     int32
	Send      []K
	Forget    []K
}

// Next builds the next request. It assumes the request will be
// answered: the session holds what it names from now on (a failure goes
// through Failed, which makes the next request full).
func (c *Client[T, V]) Next() Plan[Key[T]] {
	if c.sessionless || c.epoch == InitialEpoch {
		pl := Plan[Key[T]]{Full: true, SessionID: c.id, Epoch: InitialEpoch}
		if c.sessionless {
			pl.SessionID, pl.Epoch = InvalidID, FinalEpoch
		}
		for i := range c.n {
			p := c.slot(i)
			if !p.has(fUsed) {
				continue
			}
			p.set(fInQueue|fInForget, false)
			if p.has(fGone) {
				c.release(i)
				if c.n == 0 {
					break // everything let go
				}
				continue
			}
			p.set(fInSession, p.has(fWanted) && !c.sessionless)
			if p.has(fWanted) {
				pl.Send = append(pl.Send, c.keyOf(p))
			}
		}
		c.queue, c.forget = c.queue[:0], c.forget[:0]
		return pl
	}
	pl := Plan[Key[T]]{SessionID: c.id, Epoch: c.epoch}
	for _, i := range c.queue {
		// A slot freed since it was queued has no flags, and one handed
		// out again is queued again if it needs to be: only the flag
		// counts, once.
		p := c.slot(i)
		if !p.has(fInQueue) {
			continue
		}
		p.set(fInQueue, false)
		if !p.has(fWanted) {
			continue
		}
		p.set(fInSession, true)
		pl.Send = append(pl.Send, c.keyOf(p))
	}
	c.queue = c.queue[:0]
	forget := c.forget
	c.forget = nil
	for _, i := range forget {
		if i >= c.n {
			continue // let go with everything else
		}
		p := c.slot(i)
		if !p.has(fInForget) {
			continue
		}
		p.set(fInForget, false)
		if p.has(fWanted) || !p.has(fInSession) {
			continue
		}
		p.set(fInSession, false)
		pl.Forget = append(pl.Forget, c.keyOf(p))
		if p.has(fGone) {
			c.release(i)
		}
	}
	if c.forget == nil {
		c.forget = forget[:0]
	}
	return pl
}

// Answered moves the session on from the answer to pl: its top-level
// error code and session id, and the partitions it carries. It reports
// whether the partitions' data may be used: false after a session error
// (the next request is full, and opens a new session) or an answer
// naming a partition the session does not hold.
func (c *Client[T, V]) Answered(pl Plan[Key[T]], errorCode int16, sessionID int32, keys []Key[T]) bool {
	if c.sessionless {
		return errorCode == 0
	}
	switch {
	case errorCode == kerr.FetchSessionIDNotFound.Code:
		c.id, c.epoch = InvalidID, InitialEpoch
		return false
	case errorCode != 0:
		// INVALID_FETCH_SESSION_EPOCH and the rest: close this session
		// and open another with a full request.
		c.epoch = InitialEpoch
		return false
	}
	for _, k := range keys {
		if i := c.find(k); i < 0 || !c.slot(i).has(fInSession) {
			c.epoch = InitialEpoch
			return false
		}
	}
	switch {
	case sessionID == InvalidID:
		// The broker kept no session (no slot, or it closed it): the next
		// request is full again and asks for one.
		c.id, c.epoch = InvalidID, InitialEpoch
	case pl.Full:
		c.id, c.epoch = sessionID, NextEpoch(InitialEpoch)
	default:
		c.epoch = NextEpoch(c.epoch)
	}
	return true
}

// Failed records that the request for pl got no answer (a transport
// error, an interrupted request): whether the broker applied it is
// unknown, so the next request is full, closing this session and
// opening another.
func (c *Client[T, V]) Failed() {
	c.epoch = InitialEpoch
}

// SessionID is the current session's id (InvalidID: none).
func (c *Client[T, V]) SessionID() int32 { return c.id }
