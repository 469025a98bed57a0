package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/kraft"
	"weir/internal/metadata"
	"weir/internal/server"
)

// The controller's APIs (their handlers: 43, 45, 46, 56, 62-64, 67).
// Brokers send their lifecycle (BrokerRegistration,
// BrokerHeartbeat, UnregisterBroker, AllocateProducerIds) and ISR changes
// (AlterPartition) to the Kafka listener of the node running the active
// controller; these go straight to kraft.Node.HandleControllerRequest,
// which answers NOT_CONTROLLER on any other node. The admin requests a
// client sends (CreateTopics, ElectLeaders, ...) are handled by their own
// handlers, which validate and then forward to the controller through
// the broker's controller client; a request that client forwarded to
// another node (its client id says so) is decided there directly instead
// of being validated and forwarded again.

// brokerClientPrefix starts the client id of the controller client every
// broker uses, replicaClientPrefix that of its inter-broker transport.
const brokerClientPrefix, replicaClientPrefix = "weir-broker-", "weir-replica-"

// fromBroker reports whether a request was forwarded by another broker's
// controller client.
func fromBroker(req *server.Request) bool {
	return strings.HasPrefix(req.ClientID, brokerClientPrefix) && kraft.IsControllerKey(req.Key)
}

// handleControllerRequest decides a request on this node's active
// controller (off the request path: it returns after the commit).
func (b *Broker) handleControllerRequest(ctx context.Context, req *server.Request) *server.Reply {
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		resp, err := b.node.HandleControllerRequest(ctx, req.Key, req.Body)
		if err != nil {
			b.logger.Debug("controller request failed", "api", kmsg.NameForKey(req.Key), "err", err)
			return nil
		}
		return resp
	})
}

// handleForwarded sends a client's admin request to the controller as it
// is and answers with the controller's response.
func (b *Broker) handleForwarded(ctx context.Context, req *server.Request) *server.Reply {
	return b.forwardThenWait(ctx, req, nil)
}

// forwardThenWait forwards a request to the controller and, when applied
// is not nil, answers once what it returns (from the answer) holds on
// this node's image, or the wait times out: a client's next request here
// sees what it changed.
func (b *Broker) forwardThenWait(ctx context.Context, req *server.Request, applied func(kmsg.Response) func() bool) *server.Reply {
	if fromBroker(req) {
		return b.handleControllerRequest(ctx, req)
	}
	return b.async(ctx, func(ctx context.Context) kmsg.Response {
		resp, err := b.admin(ctx, req.Body, applied)
		if err != nil {
			b.logger.Warn("controller unreachable", "api", kmsg.NameForKey(req.Key), "err", err)
			// Answered with the error rather than a closed connection, so
			// the client retries without reconnecting.
			return kraft.ErrorResponse(req.Body, errCode(controllerError(err)))
		}
		return resp
	})
}

// controllerForClients is the controller Metadata and DescribeCluster
// name: the raft leader, which runs the active controller, while it is a
// registered, unfenced broker; else (no leader during an election, a
// leader fenced as dead) this broker, which forwards admin requests to
// whichever controller becomes active. A client is never told to wait
// for a controller it cannot reach, or for none.
func controllerForClients(img *metadata.Image, leader, self int32) int32 {
	if leader >= 0 {
		if br, ok := img.Broker(leader); ok && !br.Fenced {
			return leader
		}
	}
	return self
}
