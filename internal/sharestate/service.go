package sharestate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
)

// Host is what the service needs of the node it runs on.
type Host interface {
	// Partitions is the partition count of __share_group_state in this
	// node's registry, 0 while the topic does not exist here.
	Partitions() int
	// EnsureTopic creates __share_group_state with the given partition
	// count through the controller unless it exists, and returns once
	// this node's registry lists it.
	EnsureTopic(ctx context.Context, partitions int32) error
	// Replica is this node's replica of state partition i, nil when it
	// holds none.
	Replica(i int) Replica
	// Leader is the node leading state partition i, -1 when none.
	Leader(i int) int32
	// Serving reports whether the node finished starting: before that
	// its metadata may be older than the cluster's, and it coordinates
	// nothing.
	Serving() bool
	// Send sends an inter-broker request to a node and returns its
	// answer.
	Send(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error)
}

// Config configures a node's share-state service.
type Config struct {
	NodeID int32
	// Partitions is the partition count __share_group_state is created
	// with.
	Partitions int32
	// LogRecords is how many records a state partition may hold before
	// the coordinator rewrites stale snapshots and drops the records no
	// share partition needs any more; 0 is DefaultLogRecords.
	LogRecords int64
	Logger     *slog.Logger
}

// Service is a node's share-state service: the Coordinator of the state
// partitions it leads, and the persister every share-partition leader
// writes and reads through (Kafka's Persister), which reaches the key's
// coordinator in process or over the network. __share_group_state is
// created on first use (the first share group), as in Kafka; until then
// the coordinator does not exist.
//
// Goroutines: the coordinator's writer and one sender per node state goes
// to, all owned by the service; Close stops them.
type Service struct {
	cfg  Config
	host Host

	coord   atomic.Pointer[Coordinator]
	coordMu sync.Mutex // serialises the coordinator's creation
	sender  *sender

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// DefaultLogRecords is Config.LogRecords when unset.
const DefaultLogRecords = 100000

// New returns the service; Start starts its coordinator when the state
// topic exists already.
func New(cfg Config, host Host) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.LogRecords <= 0 {
		// Without a limit every write would rewrite every key's records
		// and move the log start (a checkpoint written and fsynced).
		cfg.LogRecords = DefaultLogRecords
	}
	s := &Service{cfg: cfg, host: host}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.sender = &sender{s: s, queues: map[int32]*sendQueue{}, stop: make(chan struct{})}
	return s
}

// Start starts the coordinator if __share_group_state exists.
func (s *Service) Start() error {
	if s.host.Partitions() == 0 {
		return nil
	}
	return s.Ensure()
}

// Ensure creates __share_group_state unless it exists and starts the
// coordinator. It waits for the controller: call it with no lock held.
func (s *Service) Ensure() error {
	if s.coord.Load() != nil {
		return nil
	}
	s.coordMu.Lock()
	defer s.coordMu.Unlock()
	if s.coord.Load() != nil {
		return nil
	}
	if s.host.Partitions() == 0 {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		if err := s.host.EnsureTopic(ctx, s.cfg.Partitions); err != nil {
			return fmt.Errorf("%w: create %s: %v", kerr.CoordinatorNotAvailable, Topic, err)
		}
	}
	n := s.host.Partitions()
	if n == 0 {
		return fmt.Errorf("%w: %s has no partitions", kerr.CoordinatorNotAvailable, Topic)
	}
	c := newCoordinator(s.host, s.cfg.Logger, n, s.cfg.LogRecords)
	s.coord.Store(c)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); c.run() }()
	return nil
}

// errNoTopic is a write attempted before the topic exists, which callers
// prevent with Ensure.
var errNoTopic = fmt.Errorf("%w: %s does not exist yet", kerr.CoordinatorNotAvailable, Topic)

// Close stops the senders, then the coordinator's writer once its queue
// is written. Call it after every request that may write is gone.
func (s *Service) Close() {
	s.sender.close()
	if c := s.coord.Load(); c != nil {
		c.close()
	}
	s.cancel()
	s.wg.Wait()
}

// Write sends a share partition's record (nil value deletes its state)
// to its coordinator and returns the ticket that completes when the
// record is committed there. full says whether value is a snapshot (a
// deletion always is). It never blocks on the network.
func (s *Service) Write(rkey, value []byte, full bool, f Fence) *Ticket {
	c := s.coord.Load()
	if c == nil {
		return failedTicket(errNoTopic)
	}
	full = full || value == nil
	return s.route(c, entry{key: rkey, value: value, full: full, fence: true, stateEpoch: f.StateEpoch, leaderEpoch: f.LeaderEpoch, reinit: f.Reinit})
}

// Read returns a share partition's records from its coordinator (none
// when it has no state), fencing older leaders of the data partition than
// leaderEpoch; a negative leaderEpoch only looks.
func (s *Service) Read(ctx context.Context, rkey []byte, leaderEpoch int32) ([]share.StateRecord, error) {
	c := s.coord.Load()
	if c == nil {
		return nil, errNoTopic
	}
	t := s.route(c, entry{key: rkey, read: true, fence: true, leaderEpoch: leaderEpoch})
	if err := t.Wait(ctx); err != nil {
		return nil, err
	}
	if t.folded != nil {
		return []share.StateRecord{*t.folded}, nil
	}
	recs := make([]share.StateRecord, 0, len(t.recs))
	for _, v := range t.recs {
		r, err := share.DecodeStateRecord(v)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// Keys lists the state keys of a group that this node's coordinator
// holds: in a cluster, the group's keys coordinated elsewhere are not
// listed.
func (s *Service) Keys(ctx context.Context, group string) []share.StateKey {
	c := s.coord.Load()
	if c == nil {
		return nil
	}
	return c.keysOf(ctx, group)
}

// route hands an entry to the coordinator when this node coordinates its
// key, else to the sender for the node that does.
func (s *Service) route(c *Coordinator, e entry) *Ticket {
	switch node := s.host.Leader(c.partFor(e.key)); {
	case node == s.cfg.NodeID:
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		defer cancel()
		return c.submit(ctx, e)
	case node < 0:
		return failedTicket(fmt.Errorf("%w: %s has no leader", kerr.CoordinatorNotAvailable, Topic))
	default:
		return s.sender.enqueue(node, e)
	}
}

// coordinator is the coordinator, for a request from another node's
// leader: __share_group_state exists once any node created it.
func (s *Service) coordinator() (*Coordinator, error) {
	if err := s.Ensure(); err != nil {
		return nil, err
	}
	return s.coord.Load(), nil
}
