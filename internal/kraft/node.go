package kraft

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"weir/internal/controller"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// Config configures a Node.
type Config struct {
	// ID is the node id: the raft server id and the broker id.
	ID int32
	// Dir holds the raft log, stable store and snapshots.
	Dir string
	// RaftAddr is the host:port the raft transport binds and advertises.
	// Empty for a single node whose only voter is itself: it then needs
	// no port and elects itself within tens of milliseconds.
	RaftAddr string
	// RaftTLS, when set, secures the raft transport (quorum.Config.TLS).
	RaftTLS *quorum.TransportTLS
	// Voters are the quorum's voters (1 or 3). A node listed here is a
	// voter and bootstraps the quorum with this list when its directory is
	// empty; a node not listed is a non-voter that follows the log once a
	// leader adds it. A single node lists only itself.
	Voters []quorum.Peer
	// NonVoters are the brokers that follow the log without voting. Every
	// new leader adds them to the raft configuration (an existing voter
	// listed here stays a voter). Others can join later through AddNonvoter
	// on the leader.
	NonVoters []quorum.Peer
	Logger    *slog.Logger

	// Controller is the controller's configuration (clock, randomness,
	// session timeout, defaults). Its Logger defaults to Logger.
	Controller controller.Config

	// Raft timing and snapshots; zero values take quorum's defaults (2 s
	// timeouts, the lease equal to the heartbeat timeout: a follower
	// applying a large batch on a busy machine answers late, and a short
	// lease made leaders step down mid-commit). A leader whose process
	// died is replaced without waiting them out (internal/quorum's
	// election watch).
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64

	// ProposeTimeout bounds the wait to hand a batch to raft (default
	// 10 s). A proposal that fails drops the controller.
	ProposeTimeout time.Duration
	// MaxPending bounds the decided batches not yet committed; at the
	// bound the controller stops taking requests, which then wait in the
	// request queue (QueueSize, default 1024) and then in Do. Default 256.
	MaxPending int
	QueueSize  int
	// TickInterval is the longest wait between controller ticks (default
	// 1 s); it ticks earlier at the controller's NextDeadline.
	TickInterval time.Duration
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Controller.Logger == nil {
		c.Controller.Logger = c.Logger
	}
	if c.Controller.Now == nil {
		c.Controller.Now = time.Now
	}
	if c.Controller.LocalBroker == nil {
		self := c.ID
		c.Controller.LocalBroker = func(id int32) bool { return id == self }
	}
	if c.ProposeTimeout <= 0 {
		c.ProposeTimeout = 10 * time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 256
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 1024
	}
	if c.TickInterval <= 0 {
		c.TickInterval = time.Second
	}
}

// Node is one member of the metadata quorum: a raft node applying the
// metadata log to a MetadataFSM and, while it leads, the active
// controller. See the package documentation.
type Node struct {
	cfg Config
	log *slog.Logger
	fsm *MetadataFSM
	q   *quorum.Node

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// active is the controller this node runs, nil when it runs none. It
	// is set once the controller is ready (after the barrier) and cleared
	// before the controller's requests are failed.
	active atomic.Pointer[Active]
	// started counts the controllers this node has run.
	started atomic.Int64

	closeOnce sync.Once
	closeErr  error
	// abrupt makes Close stop raft as a killed process would, handing
	// no leadership over (tests of failover set it).
	abrupt bool
}

// Open starts a node: the raft node and the goroutine that runs the
// controller whenever this node leads.
func Open(cfg Config) (*Node, error) {
	cfg.defaults()
	if cfg.Dir == "" {
		return nil, errors.New("kraft: Dir is required")
	}
	if len(cfg.Voters) == 0 {
		return nil, errors.New("kraft: no voters")
	}
	log := cfg.Logger.With("node", cfg.ID)
	fsm := NewMetadataFSM(log)
	q, err := quorum.Open(quorum.Config{
		ID:                 cfg.ID,
		Dir:                cfg.Dir,
		Addr:               cfg.RaftAddr,
		TLS:                cfg.RaftTLS,
		Bootstrap:          cfg.Voters,
		Logger:             log,
		HeartbeatTimeout:   cfg.HeartbeatTimeout,
		ElectionTimeout:    cfg.ElectionTimeout,
		LeaderLeaseTimeout: cfg.LeaderLeaseTimeout,
		SnapshotThreshold:  cfg.SnapshotThreshold,
		TrailingLogs:       cfg.TrailingLogs,
	}, fsm)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, log: log, fsm: fsm, q: q}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.wg.Add(1)
	go n.watchLeadership()
	log.Info("metadata node started", "voter", n.IsVoter(), "raft_addr", cfg.RaftAddr, "raft_tls", cfg.RaftTLS != nil)
	return n, nil
}

// ID is the node id.
func (n *Node) ID() int32 { return n.cfg.ID }

// IsVoter reports whether the node votes: in raft's latest
// configuration, or, before it has one, in Config.Voters.
func (n *Node) IsVoter() bool {
	for _, m := range n.q.Status().Members {
		if m.ID == n.cfg.ID {
			return m.Voter
		}
	}
	return slices.ContainsFunc(n.cfg.Voters, func(p quorum.Peer) bool { return p.ID == n.cfg.ID })
}

// Quorum is this node's view of the quorum: leader, term, members.
func (n *Node) Quorum() quorum.Status { return n.q.Status() }

// FSM is the node's state machine: Image, Subscribe, WaitForOffset.
func (n *Node) FSM() *MetadataFSM { return n.fsm }

// Image is the applied image.
func (n *Node) Image() *metadata.Image { return n.fsm.Image() }

// Leader is the raft leader as this node knows it (-1 when none).
func (n *Node) Leader() int32 {
	id, _ := n.q.Leader()
	return id
}

// Controller returns the handle of the active controller this node runs,
// or a *NotControllerError naming the leader when it runs none.
func (n *Node) Controller() (*Active, error) {
	if a := n.active.Load(); a != nil {
		return a, nil
	}
	return nil, &NotControllerError{LeaderID: n.Leader()}
}

// ControllersStarted counts the controllers this node has run: each
// leadership, and each restart after a dropped controller, is one.
func (n *Node) ControllersStarted() int64 { return n.started.Load() }

// AddNonvoter adds a broker that follows the log without voting (leader
// only).
func (n *Node) AddNonvoter(id int32, addr string) error { return n.q.AddNonvoter(id, addr) }

// Snapshot takes a raft snapshot of the metadata image now.
func (n *Node) Snapshot() error { return n.q.Snapshot() }

// Close stops the controller, fails its waiting requests with
// NOT_CONTROLLER, stops the raft node (a leader hands leadership over
// first) and waits for every goroutine the node started. It is safe to
// call more than once.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.cancel()
		// Closing raft fails the proposal or barrier a term may be
		// waiting on, so the term ends promptly.
		if n.abrupt {
			n.closeErr = n.q.CloseAbruptly()
		} else {
			n.closeErr = n.q.Close()
		}
		n.wg.Wait()
	})
	return n.closeErr
}

// watchLeadership runs a term (the controller) while this node leads. A
// term ends when leadership is lost, when the node closes, or by itself
// after a proposal error (it then starts over while still leading).
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	var (
		stop func()
		done <-chan struct{}
	)
	end := func() {
		if stop != nil {
			stop()
			stop, done = nil, nil
		}
	}
	defer end()
	begin := func() {
		ctx, cancel := context.WithCancel(n.ctx)
		ch := make(chan struct{})
		go func() {
			defer close(ch)
			n.runTerm(ctx)
		}()
		stop = func() { cancel(); <-ch }
		done = ch
	}
	leaderCh := n.q.LeaderCh()
	if n.q.IsLeader() {
		begin()
	}
	for {
		select {
		case <-n.ctx.Done():
			return
		case leader := <-leaderCh:
			// raft keeps only the latest value: true while a term runs
			// may hide a loss in between, so the term starts over.
			end()
			if leader {
				begin()
			}
		case <-done:
			stop, done = nil, nil
			if n.q.IsLeader() {
				begin()
			}
		}
	}
}

// runTerm runs controllers while this node leads: each starts from the
// committed image after a barrier and ends at the first proposal error or
// when ctx ends.
func (n *Node) runTerm(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.reconcileMembers(ctx)
	}()
	backoff := 20 * time.Millisecond
	for ctx.Err() == nil && n.q.IsLeader() {
		start := time.Now()
		err := n.runController(ctx)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("controller dropped", "err", err, "ran", time.Since(start))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// reconcileMembers adds the configured non-voters (leader only). It runs
// on its own goroutine: each change waits for a commit.
func (n *Node) reconcileMembers(ctx context.Context) {
	for _, p := range n.cfg.NonVoters {
		if ctx.Err() != nil {
			return
		}
		if slices.ContainsFunc(n.cfg.Voters, func(v quorum.Peer) bool { return v.ID == p.ID }) {
			continue
		}
		if err := n.q.AddNonvoter(p.ID, p.Addr); err != nil {
			n.log.Warn("could not add non-voter", "peer", p.ID, "addr", p.Addr, "err", err)
		}
	}
}
