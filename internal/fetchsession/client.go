package fetchsession

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Client is a fetcher's half of a session with one broker (Kafka's
// FetchSessionHandler): it knows what the broker's session holds, turns
// the partitions the fetcher wants into the next request's (all of
// them in a full request; in an incremental one only those whose data
// changed, and the ones to forget), and moves the session's id and
// epoch on from each answer. K identifies a partition; V is the
// fetcher's own state of it, kept here so that one map serves both.
//
// The fetcher calls Want with a partition's data whenever it changes
// (a new fetch offset after an answer, a new leader epoch), Pause to
// stop fetching one for a while (a back-off) and Delete to drop it.
// Nothing is done for a partition that did not change: an idle fetcher
// sends incremental requests that name nothing. Not safe for concurrent
// use.
type Client[K comparable, V any] struct {
	id    int32
	epoch int32 // the next request's; InitialEpoch asks for a full one

	parts  map[K]*Partition[V]
	live   int // entries of parts not gone
	wanted int // entries wanted
	queue  []K // wanted partitions whose data the session may not hold
	forget []K // partitions the session holds that are no longer wanted

	sessionless bool
}

// Partition is one partition a Client knows of.
type Partition[V any] struct {
	Value V
	// want is what the fetcher asks; once a request names it, the
	// session holds it (while inSession), until Want changes it and
	// queues it again.
	want      PartitionData
	wanted    bool
	inSession bool
	inQueue   bool
	inForget  bool
	// gone: deleted while the session holds it; dropped once forgotten.
	gone bool
}

// Data is what the fetcher asks of the partition.
func (p *Partition[V]) Data() PartitionData { return p.want }

// Wanted reports whether the partition is fetched (not paused).
func (p *Partition[V]) Wanted() bool { return p.wanted }

// NewClient returns a client with no session yet: its first request is
// full and asks for one.
func NewClient[K comparable, V any]() *Client[K, V] {
	return &Client[K, V]{parts: map[K]*Partition[V]{}}
}

// SetSessionless turns sessions off (Fetch before v7, or a fetcher that
// does not want them): every request is full with epoch -1.
func (c *Client[K, V]) SetSessionless(off bool) {
	if off && !c.sessionless {
		c.id, c.epoch = InvalidID, InitialEpoch
	}
	c.sessionless = off
}

// Get returns the partition, or nil.
func (c *Client[K, V]) Get(k K) *Partition[V] {
	if p := c.parts[k]; p != nil && !p.gone {
		return p
	}
	return nil
}

// Len is the number of partitions known (wanted or paused).
func (c *Client[K, V]) Len() int { return c.live }

// Wanted is the number of partitions fetched (known and not paused).
func (c *Client[K, V]) Wanted() int { return c.wanted }

// Range calls fn for every known partition until it returns false.
func (c *Client[K, V]) Range(fn func(K, *Partition[V]) bool) {
	for k, p := range c.parts {
		if !p.gone && !fn(k, p) {
			return
		}
	}
}

// Add returns the partition k, adding it (paused, with value v) when it
// is not known.
func (c *Client[K, V]) Add(k K, v V) *Partition[V] {
	p := c.parts[k]
	switch {
	case p == nil:
		p = &Partition[V]{Value: v}
		c.parts[k] = p
		c.live++
	case p.gone:
		// Deleted and added back before the session forgot it: a new
		// partition as far as the fetcher is concerned, the same entry
		// as far as the session is.
		p.Value, p.gone = v, false
		c.live++
	}
	return p
}

// Want makes k fetched with d; the next request names it if the session
// may not hold d.
func (c *Client[K, V]) Want(k K, d PartitionData) {
	p := c.Get(k)
	if p == nil {
		var zero V
		p = c.Add(k, zero)
	}
	if !p.wanted {
		c.wanted++
	}
	changed := !p.inSession || p.want != d
	p.want, p.wanted = d, true
	if changed && !p.inQueue {
		p.inQueue = true
		c.queue = append(c.queue, k)
	}
}

// Pause stops fetching k (its Value is kept); the next request forgets
// it.
func (c *Client[K, V]) Pause(k K) {
	p := c.Get(k)
	if p == nil || !p.wanted {
		return
	}
	p.wanted = false
	c.wanted--
	if p.inSession && !p.inForget {
		p.inForget = true
		c.forget = append(c.forget, k)
	}
}

// Delete drops k; the next request forgets it.
func (c *Client[K, V]) Delete(k K) {
	p := c.Get(k)
	if p == nil {
		return
	}
	c.Pause(k)
	var zero V
	p.Value, p.gone = zero, true
	c.live--
	if !p.inSession {
		delete(c.parts, k)
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
func (c *Client[K, V]) Next() Plan[K] {
	if c.sessionless || c.epoch == InitialEpoch {
		pl := Plan[K]{Full: true, SessionID: c.id, Epoch: InitialEpoch}
		if c.sessionless {
			pl.SessionID, pl.Epoch = InvalidID, FinalEpoch
		}
		for k, p := range c.parts {
			p.inQueue, p.inForget = false, false
			if p.gone {
				delete(c.parts, k)
				continue
			}
			p.inSession = p.wanted && !c.sessionless
			if p.wanted {
				pl.Send = append(pl.Send, k)
			}
		}
		c.queue, c.forget = c.queue[:0], c.forget[:0]
		return pl
	}
	pl := Plan[K]{SessionID: c.id, Epoch: c.epoch}
	for _, k := range c.queue {
		p := c.parts[k]
		if p == nil || !p.inQueue {
			continue
		}
		p.inQueue = false
		if !p.wanted {
			continue
		}
		p.inSession = true
		pl.Send = append(pl.Send, k)
	}
	for _, k := range c.forget {
		p := c.parts[k]
		if p == nil || !p.inForget {
			continue
		}
		p.inForget = false
		if p.wanted || !p.inSession {
			continue
		}
		p.inSession = false
		pl.Forget = append(pl.Forget, k)
		if p.gone {
			delete(c.parts, k)
		}
	}
	c.queue, c.forget = c.queue[:0], c.forget[:0]
	return pl
}

// Answered moves the session on from the answer to pl: its top-level
// error code and session id, and the partitions it carries. It reports
// whether the partitions' data may be used: false after a session error
// (the next request is full, and opens a new session) or an answer
// naming a partition the session does not hold.
func (c *Client[K, V]) Answered(pl Plan[K], errorCode int16, sessionID int32, keys []K) bool {
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
		p := c.parts[k]
		if p == nil || !p.inSession {
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
func (c *Client[K, V]) Failed() {
	c.epoch = InitialEpoch
}

// SessionID is the current session's id (InvalidID: none).
func (c *Client[K, V]) SessionID() int32 { return c.id }
