package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/replica"
)

// Topic is the internal topic holding the transaction coordinator's state.
const Topic = "__transaction_state"

// Host is what the coordinator needs of the node it runs on. The broker
// implements it over its registry, replicas, inter-broker transport and
// producer-id allocator.
type Host interface {
	// Partitions is the partition count of __transaction_state in this
	// node's registry, 0 while the topic does not exist here.
	Partitions() int
	// Replica is this node's replica of __transaction_state partition i,
	// nil when it holds none.
	Replica(i int32) Replica
	// PartitionLeader is the node leading a topic partition, -1 when it
	// has none at the moment; ok is false when the partition does not
	// exist (deleted, or never created): its marker is not needed.
	PartitionLeader(topic string, partition int32) (leader int32, ok bool)
	// Send sends an inter-broker request (WriteTxnMarkers) to a node,
	// this one included, and returns its answer.
	Send(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error)
	// NextProducerID hands out a producer id never handed out before
	// (the node's producer.Allocator). Errors that wrap a kerr code are
	// answered with it, others with UNKNOWN_SERVER_ERROR.
	NextProducerID() (int64, error)
}

// Replica is the part of a __transaction_state replica the coordinator
// uses; *replica.Replica implements it.
type Replica interface {
	// Leading returns the leader epoch this replica leads in (the
	// coordinator epoch), false when it does not lead.
	Leading() (epoch int32, ok bool)
	// AppendCommitted appends a batch as leader and waits until it is
	// committed (acks=all).
	AppendCommitted(ctx context.Context, batch []byte, opts wlog.AppendOptions) (replica.AppendResult, error)
	// Log is the replica's log, replayed when this node starts leading.
	Log() *wlog.Log
}

var _ Replica = (*replica.Replica)(nil)
