package sharegroup

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
// or forget partitions (a partition in both lists is forgotten), and
// epoch -1 closes it, releasing what the member holds in its partitions.
// ShareAcknowledge requests move the epoch too. A session also ends when
// its connection closes, when its member leaves or is fenced, and at
// broker shutdown; sessions are not persisted.

type sessionKey struct{ group, member string }

type sessionPart struct {
	topicID   [16]byte
	partition int32
}

type session struct {
	epoch  int32 // what the next request must carry
	parts  []sessionPart
	rotate int // where the next fetch starts among parts, for fairness
	gen    uint64
	// stop cancels the connection-close hook.
	stop func() bool
	// deferred are the member's acknowledgement writes answered before
	// they were durable (deferred.go), not yet reported.
	deferred []ackWrite
}

// NextSessionEpoch is the share session epoch that follows e, as Kafka's
// ShareRequestMetadata.nextEpoch: -1 stays final, the epoch wraps to 1.
func NextSessionEpoch(e int32) int32 {
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
func (m *Manager) fetchSession(ctx context.Context, group, member string, epoch int32, adds, forgets []sessionPart, hasAcks bool) ([]sessionPart, int, error) {
	key := sessionKey{group, member}
	m.smu.Lock()
	defer m.smu.Unlock()
	s := m.sessions[key]
	switch epoch {
	case 0:
		if hasAcks {
			return nil, 0, fmt.Errorf("%w: Acknowledge data present in the initial share fetch request", kerr.InvalidRequest)
		}
		if s != nil {
			m.removeSessionLocked(key, s)
		} else if len(m.sessions) >= m.cfg.MaxSessions {
			return nil, 0, kerr.ShareSessionLimitReached
		}
		m.sessionGen++
		s = &session{epoch: NextSessionEpoch(0), gen: m.sessionGen}
		for _, p := range adds {
			if !slices.Contains(s.parts, p) {
				s.parts = append(s.parts, p)
			}
		}
		gen := m.sessionGen
		s.stop = context.AfterFunc(ctx, func() {
			// Only queue the work: the timers' goroutine owns it.
			m.timers.arm(time.Time{}, func(time.Time) { m.connectionGone(key, gen) })
		})
		m.sessions[key] = s
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
	// Adds first, then forgets, as Kafka's ShareSession.update: a
	// partition the member stops fetching comes in both lists when the
	// request also carries its last acknowledgements (the Java client
	// names it among the topics to carry them). Those are applied, but the
	// partition leaves the session and is not fetched: records acquired
	// for it now would go to a member that drops them unread, and hold
	// the partition's in-flight window until their locks expire.
	for _, p := range adds {
		if !slices.Contains(s.parts, p) {
			s.parts = append(s.parts, p)
		}
	}
	for _, p := range forgets {
		if i := slices.Index(s.parts, p); i >= 0 {
			s.parts = slices.Delete(s.parts, i, i+1)
		}
	}
	s.epoch = NextSessionEpoch(s.epoch)
	s.rotate++
	return slices.Clone(s.parts), s.rotate, nil
}

// ackSession applies a ShareAcknowledge's session epoch.
func (m *Manager) ackSession(group, member string, epoch int32) error {
	if epoch == 0 {
		return kerr.InvalidShareSessionEpoch
	}
	m.smu.Lock()
	defer m.smu.Unlock()
	s := m.sessions[sessionKey{group, member}]
	switch {
	case s == nil:
		return kerr.ShareSessionNotFound
	case epoch == -1:
		return nil
	case s.epoch != epoch:
		return kerr.InvalidShareSessionEpoch
	}
	s.epoch = NextSessionEpoch(s.epoch)
	return nil
}

func (m *Manager) removeSessionLocked(key sessionKey, s *session) {
	if s.stop != nil {
		s.stop()
	}
	delete(m.sessions, key)
}

// dropSession forgets a member's session without releasing anything.
func (m *Manager) dropSession(key sessionKey) {
	m.smu.Lock()
	if s, ok := m.sessions[key]; ok {
		m.removeSessionLocked(key, s)
	}
	m.smu.Unlock()
}

// closeSession ends a member's session (final epoch) and releases what the
// member holds in the session's partitions.
func (m *Manager) closeSession(group, member string) {
	key := sessionKey{group, member}
	m.smu.Lock()
	s, ok := m.sessions[key]
	if ok {
		m.removeSessionLocked(key, s)
	}
	m.smu.Unlock()
	if ok {
		m.releaseSessionParts(group, member, s.parts)
	}
}

// connectionGone ends a session whose connection closed, as Kafka does,
// unless a newer session replaced it.
func (m *Manager) connectionGone(key sessionKey, gen uint64) {
	m.smu.Lock()
	s, ok := m.sessions[key]
	if !ok || s.gen != gen {
		m.smu.Unlock()
		return
	}
	delete(m.sessions, key)
	m.smu.Unlock()
	m.releaseSessionParts(key.group, key.member, s.parts)
}

func (m *Manager) releaseSessionParts(group, member string, parts []sessionPart) {
	now := m.host.Now()
	for _, p := range parts {
		m.mu.Lock()
		sp, ok := m.parts[share.StateKey{Group: group, TopicID: p.topicID, Partition: p.partition}]
		m.mu.Unlock()
		if ok {
			sp.releaseMember(member, now)
		}
	}
}
