package controller

import (
	crand "crypto/rand"
	"encoding/binary"
	"io"
	"log/slog"
	"math/rand/v2"
	"time"

	"weir/internal/metadata"
)

// Config holds the controller's settings, with Kafka's names and defaults.
type Config struct {
	// Now is the clock; every timeout is measured with it. Default
	// time.Now.
	Now func() time.Time
	// Rand drives replica placement and topic ids. Default: seeded from
	// crypto/rand. Tests pass a seeded source for reproducible decisions.
	Rand *rand.Rand
	// Logger gets lifecycle and decision summaries (never one line per
	// partition). Default: discard.
	Logger *slog.Logger

	// ClusterID, when set, must match a registering broker's.
	ClusterID string
	// SessionTimeout is broker.session.timeout.ms: a broker that has not
	// heartbeated for this long is fenced. Default 9s. Brokers heartbeat
	// every broker.heartbeat.interval.ms (2s); that is their business.
	SessionTimeout time.Duration
	// DefaultPartitions and DefaultReplicationFactor are num.partitions
	// and default.replication.factor, used when CreateTopics says -1.
	// Defaults 1 and 1.
	DefaultPartitions        int32
	DefaultReplicationFactor int16
	// DisableAutoLeaderRebalance turns auto.leader.rebalance.enable off.
	DisableAutoLeaderRebalance bool
	// LeaderImbalancePercentage is leader.imbalance.per.broker.percentage
	// (default 10): a broker whose preferred partitions are led by others
	// in a larger share than this gets them back on the next check.
	LeaderImbalancePercentage int
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds
	// (default 300s).
	LeaderImbalanceCheckInterval time.Duration
	// UncleanLeaderElection is unclean.leader.election.enable (default
	// false), which a topic config or the cluster-wide broker config of
	// the same name in the image overrides.
	UncleanLeaderElection bool
	// DisableTopicDeletion turns delete.topic.enable off.
	DisableTopicDeletion bool
	// LocalBroker reports whether a broker id is the node this controller
	// runs on (nil: none): its re-registration with a new incarnation is
	// accepted at once, since the old one cannot be alive.
	LocalBroker func(id int32) bool
	// ProducerIDBlockSize is how many producer ids one
	// AllocateProducerIds hands out. Default 1000, as Kafka.
	ProducerIDBlockSize int32
	// Configs merges and checks config changes (IncrementalAlterConfigs,
	// AlterConfigs) against the controller's view. Default PlainConfigs.
	Configs ConfigPolicy
}

func (c *Config) defaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		var seed [16]byte
		_, _ = crand.Read(seed[:])
		c.Rand = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 9 * time.Second
	}
	if c.DefaultPartitions <= 0 {
		c.DefaultPartitions = 1
	}
	if c.DefaultReplicationFactor <= 0 {
		c.DefaultReplicationFactor = 1
	}
	if c.LeaderImbalancePercentage <= 0 {
		c.LeaderImbalancePercentage = 10
	}
	if c.LeaderImbalanceCheckInterval <= 0 {
		c.LeaderImbalanceCheckInterval = 300 * time.Second
	}
	if c.ProducerIDBlockSize <= 0 {
		c.ProducerIDBlockSize = 1000
	}
	if c.Configs == nil {
		c.Configs = PlainConfigs{}
	}
}

// Controller decides the cluster's metadata changes. See the package
// documentation for the contract with its owner.
type Controller struct {
	cfg Config
	log *slog.Logger

	// img is the committed image plus this controller's own batches not
	// yet committed: decisions must see their predecessors.
	img       *metadata.Image
	committed *metadata.Image
	pending   int

	sessions      map[int32]*session
	nextRebalance time.Time
}

// session is what the controller knows of a broker and does not write to
// the log: it is rebuilt, conservatively, when a controller takes over.
type session struct {
	lastContact time.Time
	// reported is the metadata offset of the broker's last heartbeat.
	reported int64
	// caughtUpAt is the last heartbeat that reported the committed
	// offset of its time.
	caughtUpAt time.Time
	// registeredAt is the offset at which the broker's registration
	// committed, -1 while it has not. A broker is caught up, and may be
	// unfenced, once it has applied that far.
	registeredAt int64
	// shutdownAt is the offset at which its controlled shutdown committed,
	// -1 while it has not. It may stop once every active broker has
	// applied that far: they all know their new leaders.
	shutdownAt int64
}

// New returns a controller that takes over with the committed image img.
// Build it only when img holds every committed entry (for instance after
// a raft barrier on becoming leader): the controller assumes that every
// batch committed after img is one of its own.
//
// Heartbeat sessions are not in the log: every registered broker gets a
// fresh session, as if it had just heartbeated, and must report an offset
// at least img.Offset() to count as caught up.
func New(cfg Config, img *metadata.Image) *Controller {
	cfg.defaults()
	c := &Controller{cfg: cfg, log: cfg.Logger, img: img, committed: img, sessions: make(map[int32]*session)}
	now := cfg.Now()
	for _, b := range img.Brokers() {
		s := &session{lastContact: now, reported: -1, registeredAt: img.Offset(), shutdownAt: -1}
		if b.InControlledShutdown {
			s.shutdownAt = img.Offset()
		}
		c.sessions[b.ID] = s
	}
	c.nextRebalance = now.Add(cfg.LeaderImbalanceCheckInterval)
	return c
}

// Image is the controller's view: the committed image and its own
// batches in flight.
func (c *Controller) Image() *metadata.Image { return c.img }

// Pending is the number of batches the controller returned that have not
// been reported committed.
func (c *Controller) Pending() int { return c.pending }

// Committed tells the controller that the next of its batches committed,
// as img (which Delta d produced). The owner calls it for every committed
// batch, in log order. When nothing is in flight the controller adopts
// img as its view.
func (c *Controller) Committed(img *metadata.Image, d *metadata.Delta) {
	c.committed = img
	for _, bd := range d.Brokers {
		s := c.sessions[bd.ID]
		if bd.New == nil || s == nil {
			continue
		}
		if bd.Old == nil || bd.Old.Epoch != bd.New.Epoch {
			s.registeredAt = img.Offset()
		}
		if bd.New.InControlledShutdown && (bd.Old == nil || !bd.Old.InControlledShutdown) {
			s.shutdownAt = img.Offset()
		}
	}
	c.pending--
	if c.pending <= 0 {
		if c.pending < 0 {
			c.log.Warn("controller: a batch committed that this controller did not write", "offset", img.Offset())
		}
		c.pending = 0
		c.img = img
	}
}

// NextDeadline is when Tick next has something to do: the earliest
// session expiry or leader balance check. The owner may call Tick then,
// or simply every second or so.
func (c *Controller) NextDeadline() time.Time {
	next := c.nextRebalance
	if c.cfg.DisableAutoLeaderRebalance {
		next = time.Time{}
	}
	for id, s := range c.sessions {
		if b, ok := c.img.Broker(id); ok && !b.Fenced {
			if d := s.lastContact.Add(c.cfg.SessionTimeout); next.IsZero() || d.Before(next) {
				next = d
			}
		}
	}
	return next
}

// txn collects one decision's records, applying each to a builder over
// the controller's view so that later choices in the same decision see
// earlier ones. Nothing reaches the controller until commit: a decision
// is applied whole or not at all.
type txn struct {
	c    *Controller
	base *metadata.Image
	b    *metadata.Builder
	recs []metadata.Record
	err  error
	// excluded brokers are about to be fenced, shut down or unregistered:
	// they may not lead or join an ISR in this decision.
	excluded map[int32]bool
}

func (c *Controller) begin() *txn {
	return &txn{c: c, base: c.img, b: metadata.NewBuilder(c.img)}
}

// add applies and keeps a record. A refused record is a bug in the
// controller: it spoils the decision, which commit then drops.
func (t *txn) add(r metadata.Record) {
	if t.err != nil {
		return
	}
	if err := t.b.Apply(r); err != nil {
		t.err = err
		return
	}
	t.recs = append(t.recs, r)
}

// commit makes the decision the controller's view and returns its
// records, or nil and the error that spoiled it.
func (t *txn) commit() ([]metadata.Record, error) {
	if t.err != nil {
		t.c.log.Error("controller: decision dropped, its records do not apply", "err", t.err)
		return nil, t.err
	}
	if len(t.recs) == 0 {
		return nil, nil
	}
	t.c.img = t.b.Image()
	t.c.pending++
	return t.recs, nil
}

// active reports whether a broker may lead partitions and join ISRs in
// the state being decided.
func (t *txn) active(id int32) bool {
	if t.excluded[id] {
		return false
	}
	b, ok := t.b.Broker(id)
	return ok && b.Active()
}

func (c *Controller) now() time.Time { return c.cfg.Now() }

// session returns a broker's session, creating it if needed.
func (c *Controller) session(id int32) *session {
	s, ok := c.sessions[id]
	if !ok {
		s = &session{lastContact: c.now(), reported: -1, registeredAt: -1, shutdownAt: -1}
		c.sessions[id] = s
	}
	return s
}
