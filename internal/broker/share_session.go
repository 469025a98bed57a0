package broker

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/share"
)

// Share sessions (KIP-932): a member's ShareFetch requests to this broker
// form a session keyed by group and member. Epoch 0 opens it with the
// partitions the request names (replacing an older session of the
// member), later requests carry the epoch the broker expects next and add
// or forget partitions, and epoch -1 closes it, releasing what the member
// holds in its partitions. ShareAcknowledge requests move the epoch too.
// A session also ends when its connection closes, when its member leaves
// or is fenced, and at broker shutdown; sessions are not persisted.

type shareSessionKey struct{ group, member string }

type sessionPart struct {
	topicID   [16]byte
	partition int32
}

type shareSession struct {
	epoch  int32 // what the next request must carry
	parts  []sessionPart
	rotate int // where the next fetch starts among parts, for fairness
	gen    uint64
	// stop cancels the connection-close hook.
	stop func() bool
}

// nextShareEpoch follows Kafka's ShareRequestMetadata.nextEpoch.
func nextShareEpoch(e int32) int32 {
	switch {
	case e < 0:
		return -1
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// fetchSession applies a ShareFetch's session fields. It returns the
// partitions to fetch and where to start among them; a final request
// fetches nothing (the caller closes the session after its
// acknowledgements).
func (c *shareCoordinator) fetchSession(ctx context.Context, group, member string, epoch int32, adds, forgets []sessionPart, hasAcks bool) ([]sessionPart, int, error) {
	key := shareSessionKey{group, member}
	c.smu.Lock()
	defer c.smu.Unlock()
	s := c.sessions[key]
	switch epoch {
	case 0:
		if hasAcks {
			return nil, 0, fmt.Errorf("%w: Acknowledge data present in the initial share fetch request", kerr.InvalidRequest)
		}
		if s != nil {
			c.removeSessionLocked(key, s)
		} else if len(c.sessions) >= c.cfg.MaxSessions {
			return nil, 0, kerr.ShareSessionLimitReached
		}
		c.sessionGen++
		s = &shareSession{epoch: nextShareEpoch(0), gen: c.sessionGen}
		for _, p := range adds {
			if !slices.Contains(s.parts, p) {
				s.parts = append(s.parts, p)
			}
		}
		gen := c.sessionGen
		s.stop = context.AfterFunc(ctx, func() {
			// Only queue the work: the timers' goroutine owns it.
			c.timers.arm(time.Time{}, func(time.Time) { c.connectionGone(key, gen) })
		})
		c.sessions[key] = s
		return slices.Clone(s.parts), 0, nil
	case -1:
		if s == nil {
			return nil, 0, kerr.ShareSessionNotFound
		}
		return nil, 0, nil
	}
	if s == nil {
		return nil, 0, kerr.ShareSessionNotFound
	}
	if s.epoch != epoch {
		return nil, 0, kerr.InvalidShareSessionEpoch
	}
	for _, p := range forgets {
		if i := slices.Index(s.parts, p); i >= 0 {
			s.parts = slices.Delete(s.parts, i, i+1)
		}
	}
	for _, p := range adds {
		if !slices.Contains(s.parts, p) {
			s.parts = append(s.parts, p)
		}
	}
	s.epoch = nextShareEpoch(s.epoch)
	s.rotate++
	return slices.Clone(s.parts), s.rotate, nil
}

// ackSession applies a ShareAcknowledge's session epoch.
func (c *shareCoordinator) ackSession(group, member string, epoch int32) error {
	if epoch == 0 {
		return kerr.InvalidShareSessionEpoch
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	s := c.sessions[shareSessionKey{group, member}]
	switch {
	case s == nil:
		return kerr.ShareSessionNotFound
	case epoch == -1:
		return nil
	case s.epoch != epoch:
		return kerr.InvalidShareSessionEpoch
	}
	s.epoch = nextShareEpoch(s.epoch)
	return nil
}

func (c *shareCoordinator) removeSessionLocked(key shareSessionKey, s *shareSession) {
	if s.stop != nil {
		s.stop()
	}
	delete(c.sessions, key)
}

// dropSession forgets a member's session without releasing anything.
func (c *shareCoordinator) dropSession(key shareSessionKey) {
	c.smu.Lock()
	if s, ok := c.sessions[key]; ok {
		c.removeSessionLocked(key, s)
	}
	c.smu.Unlock()
}

// closeSession ends a member's session (final epoch) and releases what the
// member holds in the session's partitions.
func (c *shareCoordinator) closeSession(group, member string) {
	key := shareSessionKey{group, member}
	c.smu.Lock()
	s, ok := c.sessions[key]
	if ok {
		c.removeSessionLocked(key, s)
	}
	c.smu.Unlock()
	if ok {
		c.releaseSessionParts(group, member, s.parts)
	}
}

// connectionGone ends a session whose connection closed, as Kafka does,
// unless a newer session replaced it.
func (c *shareCoordinator) connectionGone(key shareSessionKey, gen uint64) {
	c.smu.Lock()
	s, ok := c.sessions[key]
	if !ok || s.gen != gen {
		c.smu.Unlock()
		return
	}
	delete(c.sessions, key)
	c.smu.Unlock()
	c.releaseSessionParts(key.group, key.member, s.parts)
}

func (c *shareCoordinator) releaseSessionParts(group, member string, parts []sessionPart) {
	now := c.b.now()
	for _, p := range parts {
		c.mu.Lock()
		sp, ok := c.parts[share.StateKey{Group: group, TopicID: p.topicID, Partition: p.partition}]
		c.mu.Unlock()
		if ok {
			sp.releaseMember(member, now)
		}
	}
}
