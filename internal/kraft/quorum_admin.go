package kraft

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
	"weir/internal/errcode"
	"weir/internal/metadata"
	"weir/internal/quorum"
)

// The quorum's own APIs, answered by the node running the active
// controller (brokers forward them there like the controller's keys):
// DescribeQuorum (55), AddRaftVoter (80) and RemoveRaftVoter (81). The
// quorum is hashicorp/raft, not KRaft, so they answer from raft's
// state:
//
//   - the metadata log is __cluster_metadata partition 0; its leader
//     epoch is raft's term, its high watermark the offset of the
//     metadata image the leader has applied, and a replica's log end
//     offset and last fetch are what its broker last reported in a
//     heartbeat (every 2 s), since raft does not expose a follower's
//     progress. A voter's endpoint is its raft transport, named
//     CONTROLLER as a KRaft controller listener would be.
//   - directory ids (KIP-853's voter keys) are not kept: every replica
//     reports the zero id, and AddRaftVoter and RemoveRaftVoter accept
//     any.
//   - RemoveRaftVoter demotes the voter to an observer that keeps
//     following the log, as a KRaft controller removed from the voter
//     set keeps fetching: every weir node is also a broker that needs
//     the metadata.

// clusterMetadataTopic is the metadata log's name in the quorum APIs.
const clusterMetadataTopic = "__cluster_metadata"

// controllerListener is the listener name a voter's raft transport is
// given in DescribeQuorum and taken from in AddRaftVoter.
const controllerListener = "CONTROLLER"

// isQuorumKey reports whether key is one of the quorum's APIs.
func isQuorumKey(key int16) bool { return key == 55 || key == 80 || key == 81 }

// handleQuorumRequest answers a quorum API on the node running the
// active controller, with the committed offset of the answer's state.
func (n *Node) handleQuorumRequest(ctx context.Context, a *Active, req kmsg.Request) (kmsg.Response, int64, error) {
	switch r := req.(type) {
	case *kmsg.DescribeQuorumRequest:
		return n.describeQuorum(ctx, a, r)
	case *kmsg.AddRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = quorumErr(n.addVoter(r))
		return resp, n.fsm.Image().Offset(), nil
	case *kmsg.RemoveRaftVoterRequest:
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = quorumErr(n.removeVoter(r))
		return resp, n.fsm.Image().Offset(), nil
	}
	return nil, -1, fmt.Errorf("%w: %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()))
}

// describeQuorum reads the brokers' progress on the controller's loop
// (no records) and the quorum's state from raft.
func (n *Node) describeQuorum(ctx context.Context, a *Active, req *kmsg.DescribeQuorumRequest) (kmsg.Response, int64, error) {
	var progress []controller.Progress
	_, offset, err := a.submit(ctx, func(c *controller.Controller) (kmsg.Response, []metadata.Record, error) {
		progress = c.Progress()
		return nil, nil, nil
	})
	if err != nil {
		return nil, -1, err
	}
	hw := offset
	st := n.q.Status()
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	now := time.Now()
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			if rt.Topic != clusterMetadataTopic || rp.Partition != 0 {
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
				t.Partitions = append(t.Partitions, p)
				continue
			}
			p.LeaderID, p.LeaderEpoch, p.HighWatermark = n.cfg.ID, int32(st.Term), hw
			for _, m := range st.Members {
				rs := replicaState(m.ID, n.cfg.ID, hw, progress, now)
				if m.Voter {
					p.CurrentVoters = append(p.CurrentVoters, rs)
				} else {
					p.Observers = append(p.Observers, rs)
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	for _, m := range st.Members {
		if !m.Voter {
			continue
		}
		node := kmsg.NewDescribeQuorumResponseNode()
		node.NodeID = m.ID
		if host, port, ok := splitHostPort(m.Addr); ok && port > 0 && port <= 65535 {
			l := kmsg.NewDescribeQuorumResponseNodeListener()
			l.Name, l.Host, l.Port = controllerListener, host, uint16(port)
			node.Listeners = append(node.Listeners, l)
		}
		resp.Nodes = append(resp.Nodes, node)
	}
	return resp, offset, nil
}

// replicaState is one replica of the metadata log: the leader at the high
// watermark, now; another as its broker last reported.
func replicaState(id, leader int32, hw int64, progress []controller.Progress, now time.Time) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	rs.ReplicaID, rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = id, -1, -1, -1
	if id == leader {
		rs.LogEndOffset, rs.LastFetchTimestamp, rs.LastCaughtUpTimestamp = hw, now.UnixMilli(), now.UnixMilli()
		return rs
	}
	for _, p := range progress {
		if p.Broker != id || p.Offset < 0 {
			continue
		}
		rs.LogEndOffset, rs.LastFetchTimestamp = p.Offset, p.LastContact.UnixMilli()
		if !p.CaughtUp.IsZero() {
			rs.LastCaughtUpTimestamp = p.CaughtUp.UnixMilli()
		}
	}
	return rs
}

// addVoter makes a node a voter: a new server, or an observer promoted.
func (n *Node) addVoter(r *kmsg.AddRaftVoterRequest) error {
	if err := n.checkClusterID(r.ClusterID); err != nil {
		return err
	}
	var addr string
	for _, l := range r.Listeners {
		if addr == "" || l.Name == controllerListener {
			addr = net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port)))
		}
	}
	if addr == "" || r.VoterID < 0 {
		return fmt.Errorf("%w: AddRaftVoter needs a voter id and a listener (the node's raft address)", kerr.InvalidRequest)
	}
	for _, m := range n.q.Status().Members {
		if m.ID == r.VoterID && m.Voter {
			return fmt.Errorf("%w: Node %d is already a voter.", kerr.DuplicateVoter, r.VoterID)
		}
	}
	if err := n.q.AddVoter(r.VoterID, addr); err != nil {
		return membershipErr(err)
	}
	n.log.Info("voter added", "voter", r.VoterID, "raft_addr", addr)
	return nil
}

// removeVoter makes a voter an observer.
func (n *Node) removeVoter(r *kmsg.RemoveRaftVoterRequest) error {
	if err := n.checkClusterID(r.ClusterID); err != nil {
		return err
	}
	voters, found := 0, false
	for _, m := range n.q.Status().Members {
		if m.Voter {
			voters++
			found = found || m.ID == r.VoterID
		}
	}
	if !found {
		return fmt.Errorf("%w: Node %d is not a voter.", kerr.VoterNotFound, r.VoterID)
	}
	if voters == 1 {
		return fmt.Errorf("%w: Node %d is the only voter.", kerr.InvalidRequest, r.VoterID)
	}
	if err := n.q.DemoteVoter(r.VoterID); err != nil {
		return membershipErr(err)
	}
	n.log.Info("voter removed (now an observer)", "voter", r.VoterID)
	return nil
}

func (n *Node) checkClusterID(id *string) error {
	if id != nil && n.cfg.Controller.ClusterID != "" && *id != n.cfg.Controller.ClusterID {
		return fmt.Errorf("%w: cluster %s, not %s", kerr.InconsistentClusterID, n.cfg.Controller.ClusterID, *id)
	}
	return nil
}

// membershipErr is the Kafka error of a failed raft membership change.
func membershipErr(err error) error {
	var nl *quorum.ErrNotLeader
	if errors.As(err, &nl) || errors.Is(err, kerr.NotController) {
		return fmt.Errorf("%w: %v", kerr.NotController, err)
	}
	return fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
}

// quorumErr is an error's code and message for a response.
func quorumErr(err error) (int16, *string) { return errcode.Of(err), errcode.Message(err) }

func splitHostPort(addr string) (string, int32, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.ParseInt(port, 10, 32)
	return host, int32(p), err == nil
}
