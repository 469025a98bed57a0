package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// FSM is the replicated state machine. Apply runs for every committed
// entry, in log order, on every node. Snapshot captures the state as of
// the last applied entry and returns a function that writes it (called
// later, concurrently with further Applies, so it must write the captured
// state, not the live one). Restore replaces the state with a snapshot's.
type FSM interface {
	Apply(index uint64, data []byte) any
	Snapshot() (func(w io.Writer) error, error)
	Restore(r io.Reader) error
}

// Peer is one voter of the initial configuration.
type Peer struct {
	ID   int32
	Addr string
}

// Config configures a node.
type Config struct {
	ID  int32
	Dir string
	// Addr is the host:port the raft transport binds and advertises.
	// Empty means a lone voter that never talks to a peer: the node uses
	// an in-memory transport and short timeouts, so a single node is
	// leader within tens of milliseconds of opening.
	Addr string
	// Bootstrap lists the initial voters; a node whose directory holds no
	// state and that is one of them bootstraps the cluster with them. A
	// node not listed starts empty and waits to be added.
	Bootstrap []Peer
	Logger    *slog.Logger

	// Timing. Zero values pick defaults that keep a leader on a loaded
	// machine: heartbeat (a follower's wait before it asks for a
	// pre-vote), election and lease (a leader's wait for a follower's
	// answer before it steps down) 2 s, Kafka's
	// controller.quorum.fetch.timeout.ms. A leader whose process is
	// gone is replaced without waiting them out (elect.go).
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// SnapshotThreshold is how many entries since the last snapshot
	// trigger a new one (default 8192); TrailingLogs how many entries a
	// snapshot leaves in the log for followers that lag a little (default
	// 10240). A node further behind is sent the snapshot.
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// CommitTimeout is how long raft's leader lets a follower go without
	// an append when nothing new is proposed (randomised up to twice
	// that); 0 means DefaultCommitTimeout. Followers learn of an entry
	// proposed here without waiting for it (nudge).
	CommitTimeout time.Duration
	// TLS, when set, secures a multi-node quorum's raft transport with
	// mutual TLS (tls.go); nil means plain TCP.
	TLS *TransportTLS

	// wrapLog, in tests, stands between raft's log cache and the log.
	wrapLog func(raft.LogStore) raft.LogStore
}

// recentEntries is how many of the newest log entries raft reads from
// memory rather than the log. Its leader looks up the entry before each
// follower's next one every CommitTimeout (100 to 200 ms), idle or not,
// for that entry's term: read from raft-wal, that decoded a copy of the
// newest entry (a metadata batch, up to a megabyte after a large
// CreateTopics) 100 to 200 times a second per follower at the 5 ms
// CommitTimeout of the time, which was most of an idle
// controller's CPU and all of its garbage. One entry, the newest, is
// what a caught-up follower needs; more would hold more batches in
// memory for the rare follower a few entries behind.
const recentEntries = 1

// ErrNotLeader is returned by Propose on a node that is not the leader.
type ErrNotLeader struct {
	LeaderID   int32 // -1 when unknown
	LeaderAddr string
}

func (e *ErrNotLeader) Error() string {
	return fmt.Sprintf("quorum: not the leader (leader %d at %q)", e.LeaderID, e.LeaderAddr)
}

// Node is one running raft node.
type Node struct {
	cfg       Config
	r         *raft.Raft
	transport interface{ Close() error }
	tcp       *raft.NetworkTransport // nil for a lone voter
	dialer    *peerDialer            // the transport's; nil for a lone voter
	logs      *wal.WAL
	meta      *metadb.BoltMetaDB
	fsm       *fsmAdapter

	// The barriers that carry commits to the followers (nudge).
	nudgeMu                           sync.Mutex
	nudging, nudgeAgain, nudgeStopped bool
	nudges                            sync.WaitGroup

	stopWatch context.CancelFunc
	watchDone chan struct{}
}

// Open starts a node.
func Open(cfg Config, fsm FSM) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "wal"), 0o755); err != nil {
		return nil, err
	}
	lone := cfg.Addr == ""
	if lone && (len(cfg.Bootstrap) != 1 || cfg.Bootstrap[0].ID != cfg.ID) {
		return nil, errors.New("quorum: a node without a raft address must be the only voter")
	}
	rc := raft.DefaultConfig()
	rc.LocalID = serverID(cfg.ID)
	def := DefaultTimeout
	if lone {
		// Nobody to hear from: the wait before a lone voter elects itself
		// is pure start-up latency.
		def = 20 * time.Millisecond
	}
	rc.HeartbeatTimeout = orDefault(cfg.HeartbeatTimeout, def)
	rc.ElectionTimeout = orDefault(cfg.ElectionTimeout, max(def, rc.HeartbeatTimeout))
	rc.LeaderLeaseTimeout = orDefault(cfg.LeaderLeaseTimeout, rc.HeartbeatTimeout)
	// A follower learns that an entry committed from the leader's next
	// append, which comes with the next entry or every CommitTimeout to
	// CommitTimeout x 2. The leader sends those appends idle or not, to
	// every follower: at 5 ms they were most of an idle cluster's CPU
	// (200,000 partitions RF 3: the controller's node 5-8 % of a core,
	// each other node 2.7-3.8 %), at 20 ms still about half of it. So the
	// wait no longer bounds how late a broker applies a metadata change:
	// a proposal's commit is followed at once by a barrier entry (nudge),
	// whose append carries the commit to the followers one round trip
	// later, and CommitTimeout only paces the idle appends.
	rc.CommitTimeout = orDefault(cfg.CommitTimeout, DefaultCommitTimeout)
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	if rc.SnapshotThreshold == 0 {
		rc.SnapshotThreshold = 8192
	}
	rc.SnapshotInterval = 10 * time.Second
	rc.TrailingLogs = cfg.TrailingLogs
	if rc.TrailingLogs == 0 {
		rc.TrailingLogs = 10240
	}
	level := hclog.Warn
	if lone {
		level = hclog.Error // its one election is expected, not news
	}
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, Output: slogWriter{cfg.Logger}})

	// raft-wal's Close leaves its meta store open (and its file locked),
	// so the node owns the meta store and closes it itself.
	segment, err := walSegmentSize(cfg.Dir)
	if err != nil {
		return nil, err
	}
	logs, meta, err := openLog(cfg.Dir, segment)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return nil, fmt.Errorf("quorum: open log: the file system holding %s is full (the metadata log needs %d MiB for its next segment): %w", cfg.Dir, segment>>20, err)
		}
		return nil, fmt.Errorf("quorum: open log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, rc.Logger)
	if err != nil {
		logs.Close()
		meta.Close()
		return nil, fmt.Errorf("quorum: snapshot store: %w", err)
	}
	var transport raft.Transport
	var tcp *raft.NetworkTransport
	var dialer *peerDialer
	if lone {
		_, transport = raft.NewInmemTransport(raft.ServerAddress(cfg.Bootstrap[0].Addr))
	} else {
		addr, err := net.ResolveTCPAddr("tcp", cfg.Addr)
		if err != nil {
			logs.Close()
			meta.Close()
			return nil, err
		}
		// No pipelining (MaxRPCsInFlight 1): it brings little with
		// batching, and its send loop can park for good when a follower
		// refuses an entry, which hung Shutdown of a leader under load.
		tc := &raft.NetworkTransportConfig{MaxPool: 8, Timeout: 5 * time.Second, Logger: rc.Logger, MaxRPCsInFlight: 1}
		dialer = newPeerDialer()
		if cfg.TLS == nil {
			tc.Stream, err = newTCPStream(cfg.Addr, addr, dialer)
		} else {
			tc.Stream, err = newTLSStream(cfg.Addr, addr, cfg.TLS, dialer)
		}
		if err == nil {
			tcp = raft.NewNetworkTransportWithConfig(tc)
		}
		if err != nil {
			logs.Close()
			meta.Close()
			return nil, fmt.Errorf("quorum: transport: %w", err)
		}
		transport = tcp
	}
	closer := transport.(interface{ Close() error })
	ad := &fsmAdapter{fsm: fsm}
	var store raft.LogStore = logs
	if cfg.wrapLog != nil {
		store = cfg.wrapLog(store)
	}
	cached, err := raft.NewLogCache(recentEntries, store)
	if err != nil {
		closer.Close()
		logs.Close()
		meta.Close()
		return nil, fmt.Errorf("quorum: %w", err)
	}
	r, err := raft.NewRaft(rc, ad, cached, logs, snaps, transport)
	if err != nil {
		closer.Close()
		logs.Close()
		meta.Close()
		return nil, fmt.Errorf("quorum: %w", err)
	}
	n := &Node{cfg: cfg, r: r, transport: closer, tcp: tcp, dialer: dialer, logs: logs, meta: meta, fsm: ad}
	if err := n.maybeBootstrap(logs, snaps); err != nil {
		n.Close()
		return nil, err
	}
	if tcp != nil {
		ctx, cancel := context.WithCancel(context.Background())
		n.stopWatch, n.watchDone = cancel, make(chan struct{})
		go func() {
			defer close(n.watchDone)
			n.watchLeader(ctx, timingFor(rc.HeartbeatTimeout))
		}()
	}
	return n, nil
}

// openLog opens the metadata log in dir/wal with segments of segment
// bytes, and the meta store it owns (raft-wal's Close leaves that open).
// raft-wal 0.4.1 or later: 0.4.0 marked the segment a tail truncation
// (raft's "clearing log suffix") sealed without writing its index, and
// the node could not open its log again.
func openLog(dir string, segment int) (*wal.WAL, *metadb.BoltMetaDB, error) {
	meta := &metadb.BoltMetaDB{}
	logs, err := wal.Open(filepath.Join(dir, "wal"), wal.WithMetaStore(meta), wal.WithSegmentSize(segment))
	if err != nil {
		meta.Close()
		return nil, nil, err
	}
	return logs, meta, nil
}

// The metadata log's segments are preallocated files: 64 MiB, as
// raft-wal makes them, when the file system has room, else a quarter of
// what is free, down to 1 MiB, so that a node starts in a small data
// directory; below 4 MiB free it refuses to start and says why. A
// segment holds at least one entry, however large.
const (
	walSegmentMax = 64 << 20
	walSegmentMin = 1 << 20
)

// walSegmentSize is the segment size for a log in dir.
func walSegmentSize(dir string) (int, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return walSegmentMax, nil // the open reports what is wrong
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free < 4*walSegmentMin {
		return 0, fmt.Errorf("quorum: %s has %d KiB free; the metadata log needs at least %d MiB", dir, free>>10, 4*walSegmentMin>>20)
	}
	return int(min(max(free/4, walSegmentMin), walSegmentMax)), nil
}

// DefaultTimeout is the heartbeat, election and lease timeout of a
// multi-node quorum when Config leaves them zero.
const DefaultTimeout = 2 * time.Second

// DefaultCommitTimeout is raft's CommitTimeout when Config leaves it
// zero: idle appends to each follower every 100 to 200 ms.
const DefaultCommitTimeout = 100 * time.Millisecond

func (n *Node) maybeBootstrap(logs *wal.WAL, snaps raft.SnapshotStore) error {
	member := false
	var servers []raft.Server
	for _, p := range n.cfg.Bootstrap {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(p.ID), Address: raft.ServerAddress(p.Addr)})
		member = member || p.ID == n.cfg.ID
	}
	if !member {
		return nil
	}
	has, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil || has {
		return err
	}
	f := n.r.BootstrapCluster(raft.Configuration{Servers: servers})
	if err := f.Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("quorum: bootstrap: %w", err)
	}
	return nil
}

// Propose replicates data and returns once it is committed and applied
// here, with the FSM's result for it.
func (n *Node) Propose(ctx context.Context, data []byte) (uint64, any, error) {
	timeout := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return 0, nil, ctx.Err()
		}
	}
	f := n.r.Apply(data, timeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			id, addr := n.Leader()
			return 0, nil, &ErrNotLeader{LeaderID: id, LeaderAddr: addr}
		}
		return 0, nil, err
	}
	n.nudge()
	return f.Index(), f.Response(), nil
}

// nudge tells the followers at once that what this leader proposed has
// committed. raft's leader sends its commit index only with an append,
// and appends go out when an entry is added or every CommitTimeout: so
// it adds one, a barrier (no command, nothing for the FSM), whose
// append carries the commit. Proposals within nudgeGap of a barrier
// share the next one. The barrier's own commit the followers learn
// with the next append, which is nothing to them.
func (n *Node) nudge() {
	if n.tcp == nil {
		return // a lone voter has no follower
	}
	n.nudgeMu.Lock()
	defer n.nudgeMu.Unlock()
	switch {
	case n.nudgeStopped:
	case n.nudging:
		n.nudgeAgain = true
	default:
		n.nudging = true
		n.nudges.Add(1)
		go n.nudgeLoop()
	}
}

// nudgeLoop adds barriers, nudgeGap apart, while nudge asks for them;
// Close waits for it. It does not wait for a barrier's future: raft
// leaves the future of an entry in flight when it shuts down
// unanswered, which held Close for ever. Adding one waits only for
// raft's loop to take it, which a shutdown ends at once.
func (n *Node) nudgeLoop() {
	defer n.nudges.Done()
	for {
		// An error (no longer the leader, shut down) leaves nothing to
		// tell: a new leader's appends carry its own commit.
		n.r.Barrier(nudgeTimeout)
		time.Sleep(nudgeGap)
		n.nudgeMu.Lock()
		if !n.nudgeAgain || n.nudgeStopped {
			n.nudging = false
			n.nudgeMu.Unlock()
			return
		}
		n.nudgeAgain = false
		n.nudgeMu.Unlock()
	}
}

const (
	// nudgeTimeout bounds the wait for raft's loop to take a barrier.
	nudgeTimeout = 5 * time.Second
	// nudgeGap is the least time between two barriers: about a round
	// trip to a follower and its log write here.
	nudgeGap = 5 * time.Millisecond
)

// IsLeader reports whether this node leads.
func (n *Node) IsLeader() bool { return n.r.State() == raft.Leader }

// LeaderCh delivers leadership changes of this node (true: became
// leader). hashicorp/raft drops values the reader does not take, so read
// it continuously or poll IsLeader.
func (n *Node) LeaderCh() <-chan bool { return n.r.LeaderCh() }

// Leader returns the current leader's id and address (-1, "" if none).
func (n *Node) Leader() (int32, string) {
	addr, id := n.r.LeaderWithID()
	if id == "" {
		return -1, ""
	}
	v, err := strconv.Atoi(string(id))
	if err != nil {
		return -1, string(addr)
	}
	return int32(v), string(addr)
}

// Barrier waits until every entry committed before the call is applied to
// this node's FSM; a new leader calls it before trusting its state.
func (n *Node) Barrier(ctx context.Context) error {
	timeout := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	return n.r.Barrier(timeout).Error()
}

// AppliedIndex is the index of the last entry applied to the FSM.
func (n *Node) AppliedIndex() uint64 { return n.r.AppliedIndex() }

// AddVoter and AddNonvoter change membership (leader only). AddVoter
// promotes a non-voter, or adds a new server as a voter; the leader
// replicates the log to it from then on.
func (n *Node) AddVoter(id int32, addr string) error {
	return n.r.AddVoter(serverID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error()
}

// DemoteVoter makes a voter a non-voter that keeps following the log
// (leader only; the leader may demote itself, then steps down).
func (n *Node) DemoteVoter(id int32) error {
	return n.r.DemoteVoter(serverID(id), 0, 10*time.Second).Error()
}

// Member is one server of the raft configuration.
type Member struct {
	ID    int32
	Addr  string
	Voter bool
}

// Status is this node's view of the quorum.
type Status struct {
	// Leader is the leader's id, -1 when none is known.
	Leader int32
	// Term is the current raft term.
	Term uint64
	// CommitIndex is the last index known committed; LastIndex the last
	// in this node's log.
	CommitIndex, LastIndex uint64
	// Members is the latest configuration (committed or not), by id.
	Members []Member
}

// Status reads the node's view of the quorum.
func (n *Node) Status() Status {
	st := Status{Term: n.r.CurrentTerm(), CommitIndex: n.r.CommitIndex(), LastIndex: n.r.LastIndex()}
	st.Leader, _ = n.Leader()
	for _, s := range n.r.GetConfiguration().Configuration().Servers {
		id, ok := parseServerID(s.ID)
		if !ok {
			continue
		}
		st.Members = append(st.Members, Member{ID: id, Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	slices.SortFunc(st.Members, func(a, b Member) int { return int(a.ID) - int(b.ID) })
	return st
}

func (n *Node) AddNonvoter(id int32, addr string) error {
	return n.r.AddNonvoter(serverID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error()
}

// RemoveServer removes a member (leader only).
func (n *Node) RemoveServer(id int32) error {
	return n.r.RemoveServer(serverID(id), 0, 10*time.Second).Error()
}

// Snapshot asks for a snapshot now (tests and operators).
func (n *Node) Snapshot() error { return n.r.Snapshot().Error() }

// shutdownGrace is how long Close lets raft stop on its own before it
// closes the transport under it.
const shutdownGrace = 2 * time.Second

// Close stops the node and waits for its goroutines. A leader first hands
// leadership to a follower (raft's leadership transfer), which takes
// over at once. raft's Shutdown
// waits for its replication goroutines, which can be stuck writing to a
// peer that stopped reading (paused, or shutting down too); closing the
// transport fails those writes, so after a grace period it is closed
// under a shutdown that has not finished.
func (n *Node) Close() error { return n.close(true) }

// CloseAbruptly closes the node as a killed process stops: a leader hands
// nothing over, so the others find it gone. Tests and benchmarks of
// failover use it.
func (n *Node) CloseAbruptly() error { return n.close(false) }

func (n *Node) close(handOver bool) error {
	if n.stopWatch != nil {
		n.stopWatch()
		<-n.watchDone
	}
	if !handOver {
		// The port refuses connections at once, as a dead process's.
		n.transport.Close()
	}
	if handOver && n.tcp != nil && n.IsLeader() {
		// Hand leadership to a follower first: it takes over at once
		// instead of waiting to find this node gone.
		if err := n.r.LeadershipTransfer().Error(); err != nil {
			n.cfg.Logger.Info("no leadership transfer before closing", "err", err)
		}
	}
	n.nudgeMu.Lock()
	n.nudgeStopped = true
	n.nudgeMu.Unlock()
	if n.dialer != nil {
		n.dialer.Stop() // raft's shutdown waits for its goroutines' dials
	}
	f := n.r.Shutdown()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	var err error
	select {
	case err = <-done:
		n.transport.Close()
	case <-time.After(shutdownGrace):
		n.transport.Close()
		err = <-done
	}
	n.nudges.Wait() // at most nudgeGap once raft has shut down
	if cerr := n.logs.Close(); err == nil {
		err = cerr
	}
	if cerr := n.meta.Close(); err == nil {
		err = cerr
	}
	return err
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

func parseServerID(id raft.ServerID) (int32, bool) {
	v, err := strconv.ParseInt(string(id), 10, 32)
	return int32(v), err == nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// fsmAdapter turns raft's FSM calls into ours.
type fsmAdapter struct{ fsm FSM }

func (a *fsmAdapter) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	return a.fsm.Apply(l.Index, l.Data)
}

func (a *fsmAdapter) Snapshot() (raft.FSMSnapshot, error) {
	write, err := a.fsm.Snapshot()
	if err != nil {
		return nil, err
	}
	return snapshot{write}, nil
}

func (a *fsmAdapter) Restore(r io.ReadCloser) error {
	defer r.Close()
	return a.fsm.Restore(r)
}

type snapshot struct{ write func(io.Writer) error }

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}

// slogWriter forwards hclog's lines to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(string(trimNewline(p)), "component", "raft")
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}
