package fetchsession

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of Kafka's session settings.
const (
	// DefaultSlots is max.incremental.fetch.session.cache.slots.
	DefaultSlots = 1000
	// DefaultEvictionAge is how long a session is safe from eviction by
	// a larger one, and how long an unused one lives before any new one
	// may take its slot (Kafka's min.incremental.fetch.session.eviction.ms).
	DefaultEvictionAge = 120 * time.Second
)

// Config configures a Cache.
type Config struct {
	// Slots is max.incremental.fetch.session.cache.slots: at most this
	// many sessions are kept; 0 keeps none (every fetch is full).
	Slots int
	// EvictionAge is DefaultEvictionAge when zero.
	EvictionAge time.Duration
	// NewID draws a candidate session id; nil draws a random positive
	// int32. Ids in use, and InvalidID, are drawn again.
	NewID func() int32
}

// Cache holds the fetch sessions of a broker (Kafka's FetchSessionCache
// and FetchManager in one): it admits each Fetch request as
// sessionless, full (opening a session when there is a slot, or
// evicting one Kafka's way) or incremental, and answers the session
// errors as Kafka does.
type Cache struct {
	cfg Config

	mu         sync.Mutex
	sessions   map[int32]*Session
	partitions int // sum of the cached sizes

	evictions atomic.Uint64
	counts    [kinds]kindCounts
}

type kindCounts struct {
	requests, requested, read, answered atomic.Uint64
}

// NewCache returns an empty cache.
func NewCache(cfg Config) *Cache {
	if cfg.EvictionAge <= 0 {
		cfg.EvictionAge = DefaultEvictionAge
	}
	if cfg.NewID == nil {
		cfg.NewID = func() int32 { return rand.Int32N(1<<31-1) + 1 }
	}
	return &Cache{cfg: cfg, sessions: map[int32]*Session{}}
}

// Kind is how a request was admitted.
type Kind int8

// The kinds of fetch requests.
const (
	// Sessionless: epoch -1 (or Fetch before v7): every partition named,
	// every partition answered, nothing kept.
	Sessionless Kind = iota
	// Full: epoch 0: every partition named and answered; a session is
	// opened for the next request when the cache has room.
	Full
	// Incremental: an open session's next epoch: only changed partitions
	// named, only changed partitions answered.
	Incremental
	kinds
)

func (k Kind) String() string {
	switch k {
	case Full:
		return "full"
	case Incremental:
		return "incremental"
	}
	return "sessionless"
}

// Begin admits one Fetch request. replica is the follower's broker id
// for a follower's fetch (its session is privileged: it may evict
// consumers' sessions), -1 for a consumer's. It returns the
// request's Fetch, or a Kafka error code for the whole request
// (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
// FETCH_SESSION_TOPIC_ID_ERROR), which Kafka answers with session id 0
// and no partitions.
func (c *Cache) Begin(r *kmsg.FetchRequest, replica int32, now time.Time) (*Fetch, int16) {
	usesIDs := r.Version >= 13
	id, epoch := r.SessionID, r.SessionEpoch
	if r.Version < 7 {
		id, epoch = InvalidID, FinalEpoch
	}
	if epoch == InitialEpoch || epoch == FinalEpoch {
		if id != InvalidID {
			// A full request closes the session it names.
			c.close(id)
		}
		if epoch == FinalEpoch {
			return c.fresh(Sessionless, r, replica, now), 0
		}
		return c.fresh(Full, r, replica, now), 0
	}
	c.mu.Lock()
	s := c.sessions[id]
	if s == nil {
		c.mu.Unlock()
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	switch {
	case s.epoch != epoch:
		s.mu.Unlock()
		c.mu.Unlock()
		return nil, kerr.InvalidFetchSessionEpoch.Code
	case s.usesIDs != usesIDs:
		s.mu.Unlock()
		c.mu.Unlock()
		return nil, kerr.FetchSessionTopicIDError.Code
	}
	putAll(s, r)
	for _, ft := range r.ForgottenTopics {
		ref := topicRef(ft.TopicID, ft.Topic, usesIDs)
		for _, p := range ft.Partitions {
			s.remove(ref, p)
		}
	}
	if s.size == 0 {
		// Nothing left: the session closes and the request is answered
		// as a sessionless one (it names nothing, or only what it also
		// forgets).
		c.removeLocked(s)
		s.unwatch()
		s.mu.Unlock()
		c.mu.Unlock()
		return c.fresh(Sessionless, r, replica, now), 0
	}
	c.touchLocked(s, now)
	s.epoch = NextEpoch(s.epoch)
	s.gen++
	f := &Fetch{c: c, s: s, kind: Incremental, epoch: s.epoch, gen: s.gen}
	s.mu.Unlock()
	c.mu.Unlock()
	c.count(Incremental, r)
	return f, 0
}

// fresh admits r with a new session holding what it names: a
// sessionless request's, or a full one's that Finish may cache.
func (c *Cache) fresh(kind Kind, r *kmsg.FetchRequest, replica int32, now time.Time) *Fetch {
	s := newSession(replica, r.Version >= 13, now)
	s.mu.Lock()
	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	s.entries = make([]entry, 0, n)
	s.queued = make([]uint64, 0, n/64+1)
	s.read = make([]uint64, 0, n/64+1)
	putAll(s, r)
	s.gen++
	f := &Fetch{c: c, s: s, kind: kind, gen: s.gen}
	s.mu.Unlock()
	c.count(kind, r)
	return f
}

func topicRef(id [16]byte, name string, usesIDs bool) TopicRef {
	if usesIDs {
		return TopicRef{ID: id}
	}
	return TopicRef{Name: name}
}

// putAll adds or updates every partition r names (a partition named
// twice takes its last data, as Kafka's request map does). s.mu held.
func putAll(s *Session, r *kmsg.FetchRequest) {
	for ti := range r.Topics {
		rt := &r.Topics[ti]
		ref := topicRef(rt.TopicID, rt.Topic, s.usesIDs)
		for pi := range rt.Partitions {
			rp := &rt.Partitions[pi]
			s.put(ref, rp.Partition, dataOf(r.Version, rp))
		}
	}
}

// dataOf is a request partition's data with the fields its version
// lacks at their "absent" values.
func dataOf(version int16, rp *kmsg.FetchRequestTopicPartition) PartitionData {
	d := PartitionData{FetchOffset: rp.FetchOffset, MaxBytes: rp.PartitionMaxBytes, LogStartOffset: -1, LeaderEpoch: -1, LastFetchedEpoch: -1}
	if version >= 5 {
		d.LogStartOffset = rp.LogStartOffset
	}
	if version >= 9 {
		d.LeaderEpoch = rp.CurrentLeaderEpoch
	}
	if version >= 12 {
		d.LastFetchedEpoch = rp.LastFetchedEpoch
	}
	return d
}

func (c *Cache) count(k Kind, r *kmsg.FetchRequest) {
	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	c.counts[k].requests.Add(1)
	c.counts[k].requested.Add(uint64(n))
}

// close removes session id, if cached, and takes it out of its
// partitions' marks.
func (c *Cache) close(id int32) {
	c.mu.Lock()
	s := c.sessions[id]
	if s != nil {
		c.removeLocked(s)
	}
	c.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.unwatch()
		s.mu.Unlock()
	}
}

// removeLocked drops s from the cache. c.mu held.
func (c *Cache) removeLocked(s *Session) {
	if !s.inCache {
		return
	}
	delete(c.sessions, s.id)
	c.partitions -= s.cachedSize
	s.inCache = false
}

// touchLocked records a use of s: its last use, its size, and whether
// it is old enough to be evicted by others (decided now, as Kafka does,
// not at eviction time). c.mu and s.mu held.
func (c *Cache) touchLocked(s *Session, now time.Time) {
	s.lastUsed = now
	s.used.Store(now.UnixNano())
	if s.cachedSize >= 0 {
		c.partitions -= s.cachedSize
	}
	s.cachedSize = s.size
	c.partitions += s.cachedSize
	old := now.Sub(s.created) > c.cfg.EvictionAge
	s.evictableAll = old
	s.evictablePri = old || !s.privileged
}

// insert puts a new session (s.mu held by the caller, not in the cache)
// in the cache when there is a slot or one can be evicted, giving it an
// id and the first incremental epoch. It returns the evicted session,
// for the caller to unwatch once it released s.mu, and whether s was
// cached.
func (c *Cache) insert(s *Session, now time.Time) (evicted *Session, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.Slots <= 0 {
		return nil, false
	}
	if s.privileged {
		// A follower broker fetches from this leader with one fetcher,
		// so a new session of it replaces the one it had: an answer lost
		// on the way (a request the follower interrupted) leaves no
		// orphan holding its partitions until it is evicted.
		for _, old := range c.sessions {
			if old.replica == s.replica {
				c.removeLocked(old)
				evicted = old
				break
			}
		}
	}
	if evicted == nil && len(c.sessions) >= c.cfg.Slots {
		evicted = c.evictLocked(s.privileged, s.size, now)
		if evicted == nil {
			return nil, false
		}
	}
	for {
		id := c.cfg.NewID()
		if id != InvalidID && id > 0 && c.sessions[id] == nil {
			s.id = id
			break
		}
	}
	s.epoch = NextEpoch(InitialEpoch)
	s.inCache = true
	c.sessions[s.id] = s
	c.touchLocked(s, now)
	return evicted, true
}

// evictLocked is Kafka's choice of a session to make room for a new one
// (privileged: a follower's; size: its partitions), or nil:
//
//  1. the least recently used session, if unused for longer than the
//     eviction age;
//  2. otherwise the least valuable evictable session, ordered by
//     (privileged, size, id), if the new one is worth more: a follower's
//     session may take a consumer's slot, a larger session a smaller
//     one's; only sessions older than the eviction age (and, for a
//     privileged newcomer, any consumer's) are evictable.
//
// c.mu held.
func (c *Cache) evictLocked(privileged bool, size int, now time.Time) *Session {
	var lru, low *Session
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		evictable := s.evictableAll
		if privileged {
			evictable = s.evictablePri
		}
		if evictable && (low == nil || lessValuable(s.privileged, s.cachedSize, s.id, low.privileged, low.cachedSize, low.id)) {
			low = s
		}
	}
	var victim *Session
	switch {
	case lru != nil && now.Sub(lru.lastUsed) > c.cfg.EvictionAge:
		victim = lru
	case low != nil && !lessValuable(privileged, size, 0, low.privileged, low.cachedSize, low.id):
		victim = low
	default:
		return nil
	}
	c.removeLocked(victim)
	c.evictions.Add(1)
	return victim
}

// lessValuable orders sessions by (privileged, size, id), false first.
func lessValuable(ap bool, as int, aid int32, bp bool, bs int, bid int32) bool {
	if ap != bp {
		return !ap
	}
	if as != bs {
		return as < bs
	}
	return aid < bid
}

// Stats are the cache's figures for metrics and tests.
type Stats struct {
	Sessions   int
	Partitions int // partitions held by the cached sessions
	Evictions  uint64
	// Per Kind (index by Kind): requests admitted, the partitions they
	// named, the partition reads they were handed (a partition read again
	// after a wake counts again), and the partitions their responses
	// carried.
	Requests  [kinds]uint64
	Requested [kinds]uint64
	Read      [kinds]uint64
	Answered  [kinds]uint64
}

// Stats returns the current figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	st := Stats{Sessions: len(c.sessions), Partitions: c.partitions}
	c.mu.Unlock()
	st.Evictions = c.evictions.Load()
	for k := range kinds {
		st.Requests[k] = c.counts[k].requests.Load()
		st.Requested[k] = c.counts[k].requested.Load()
		st.Read[k] = c.counts[k].read.Load()
		st.Answered[k] = c.counts[k].answered.Load()
	}
	return st
}
