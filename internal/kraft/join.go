package kraft

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/quorum"
)

// QuorumConfig says how a broker takes part in the metadata quorum. The
// zero value is a single node: a one-voter quorum of this node alone,
// with no raft port.
type QuorumConfig struct {
	// RaftAddr is the host:port of this node's raft transport. Empty for
	// a single node.
	RaftAddr string
	// Voters are the quorum's voters (controller.quorum.voters); empty
	// means this node alone.
	Voters []quorum.Peer
	// NonVoters are the other brokers, which follow the metadata log
	// without voting.
	NonVoters []quorum.Peer
	// ClusterID is the cluster's id. Empty derives it from the voter list
	// (every node of a cluster computes the same one), or picks a random
	// one for a single node, kept in the metadata directory.
	ClusterID string
	// SessionTimeout is broker.session.timeout.ms (default 9 s);
	// HeartbeatInterval broker.heartbeat.interval.ms (default 2 s).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// ControllerBootstrap are Kafka listener addresses of quorum voters,
	// tried while this node does not know the raft leader (a restarted
	// node learns it only when the leader next reaches it). The brokers of
	// the applied image are tried too.
	ControllerBootstrap []string
	// RaftTimeout is the raft heartbeat, election and lease timeout of a
	// multi-node quorum; zero keeps internal/quorum's 2 s.
	RaftTimeout time.Duration
	// StartTimeout bounds how long a broker's start waits for the
	// controller to unfence it (default 30 s).
	StartTimeout time.Duration
	// RaftTLS, when set, secures the raft transport of a multi-node
	// quorum with mutual TLS (quorum.TransportTLS).
	RaftTLS *quorum.TransportTLS
}

// Single reports whether the quorum is node self alone.
func (c QuorumConfig) Single(self int32) bool {
	return len(c.Voters) == 0 || (len(c.Voters) == 1 && c.Voters[0].ID == self && len(c.NonVoters) == 0)
}

// MetadataDir is the directory under a node's data directory that holds
// the raft log, stable store and metadata snapshots.
const MetadataDir = "__cluster_metadata"

// JoinConfig is what Join opens a broker's quorum node and controller
// client with.
type JoinConfig struct {
	NodeID  int32
	DataDir string // the node's data directory; the metadata is in MetadataDir under it
	Quorum  QuorumConfig
	Logger  *slog.Logger
	// Controller is the active controller's configuration when this node
	// runs it; ClusterID and SessionTimeout come from Quorum.
	Controller controller.Config
	// InterBrokerListener names the listener other brokers are reached
	// on; KnownBrokers lists their addresses in the applied image, tried
	// while the raft leader is unknown.
	InterBrokerListener func() string
	KnownBrokers        func() []string
	ClientID            string
	// Dial, when set, dials another broker's inter-broker listener.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Joined is a broker's part of the metadata quorum: its raft node, the
// client it sends controller requests with, and the cluster id.
type Joined struct {
	Node      *Node
	Client    *KafkaClient
	ClusterID string
}

// Join opens a broker's node of the metadata quorum (a quorum of one on
// the same path when cfg.Quorum is Single) and the client the broker
// sends controller requests with, after loading or deriving the cluster
// id and writing Kafka's meta.properties.
func Join(cfg JoinConfig) (Joined, error) {
	cc := cfg.Quorum
	voters, raftAddr := cc.Voters, cc.RaftAddr
	if cc.Single(cfg.NodeID) {
		voters = []quorum.Peer{{ID: cfg.NodeID, Addr: "node-" + strconv.Itoa(int(cfg.NodeID))}}
		raftAddr = ""
	} else if raftAddr == "" {
		return Joined{}, errors.New("kraft: a node of a multi-node quorum needs a raft address")
	}
	dir := filepath.Join(cfg.DataDir, MetadataDir)
	id, err := LoadClusterID(dir, cc.ClusterID, voters)
	if err != nil {
		return Joined{}, err
	}
	if err := EnsureKafkaMetaProperties(dir, id, cfg.NodeID); err != nil {
		return Joined{}, err
	}
	// A single node keeps the quick raft defaults.
	timeout := cc.RaftTimeout
	if raftAddr == "" {
		timeout = 0
	}
	ctl := cfg.Controller
	ctl.ClusterID, ctl.SessionTimeout = id, cc.SessionTimeout
	n, err := Open(Config{
		ID: cfg.NodeID, Dir: dir, RaftAddr: raftAddr, Voters: voters, NonVoters: cc.NonVoters, RaftTLS: cc.RaftTLS,
		Logger:           cfg.Logger,
		HeartbeatTimeout: timeout, ElectionTimeout: timeout, LeaderLeaseTimeout: timeout,
		Controller: ctl,
	})
	if err != nil {
		return Joined{}, fmt.Errorf("metadata quorum: %w", err)
	}
	client := NewKafkaClient(KafkaClientConfig{
		Leader: n.Leader, Resolve: ListenerResolver(n, cfg.InterBrokerListener), Local: n,
		Bootstrap: cc.ControllerBootstrap, BootstrapFunc: cfg.KnownBrokers,
		ClientID: cfg.ClientID, Logger: cfg.Logger, Dial: cfg.Dial,
	})
	return Joined{Node: n, Client: client, ClusterID: id}, nil
}

// WaitController waits until this node runs the active controller,
// which on a quorum of one means its whole log is applied (the
// controller starts after a raft barrier).
func (n *Node) WaitController(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := n.Controller(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kraft: the metadata quorum of one did not elect itself within %v", timeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ProducerIDReserver hands out producer ids in blocks the active
// controller allocates (AllocateProducerIds), so ids are unique across
// the cluster; it is a producer.Allocator's reserver.
type ProducerIDReserver struct {
	Client   *KafkaClient
	BrokerID int32
	// Epoch is the broker's registration epoch (0 before it registered).
	Epoch func() int64
	// Ctx bounds every reservation; each is also cut at 15 s.
	Ctx context.Context
}

// Reserve asks the controller for a block of at least n ids and returns
// its first. As in Kafka, a block that cannot be had now (the broker not
// registered yet, a stale broker epoch, no controller) is
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry: a producer that
// reaches a broker still starting must not take it as fatal.
func (r ProducerIDReserver) Reserve(n int64) (int64, error) {
	epoch := r.Epoch()
	if epoch <= 0 {
		return 0, fmt.Errorf("%w: broker %d is not registered yet", kerr.CoordinatorLoadInProgress, r.BrokerID)
	}
	ctx, cancel := context.WithTimeout(r.Ctx, 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = r.BrokerID, epoch
	resp, err := r.Client.Admin(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("%w: producer id block: %v", kerr.CoordinatorLoadInProgress, err)
	}
	ar := resp.(*kmsg.AllocateProducerIDsResponse)
	if ar.ErrorCode != 0 {
		return 0, fmt.Errorf("%w: producer id block: %v", kerr.CoordinatorLoadInProgress, kerr.ErrorForCode(ar.ErrorCode))
	}
	if int64(ar.ProducerIDLen) < n {
		return 0, fmt.Errorf("%w: the controller handed out %d producer ids, %d needed", kerr.UnknownServerError, ar.ProducerIDLen, n)
	}
	return ar.ProducerIDStart, nil
}

// ClientError turns a failed controller call into the Kafka error a
// client should see: one it can retry.
func ClientError(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
	}
	return fmt.Errorf("%w: %v", kerr.NotController, err)
}
