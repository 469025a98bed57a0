package kraft

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ControllerClient is how a broker talks to the active controller,
// wherever it runs: requests are kmsg requests, answers kmsg responses
// at the request's version. Kafka errors are in the responses; the error
// result is for what prevented an answer (ctx ended, no controller could
// be reached, a request the controller does not take).
//
// Requests answered NOT_CONTROLLER, or that could not reach a
// controller, are retried (after a short backoff, following the raft
// leader) until ctx ends; the last NOT_CONTROLLER answer is then
// returned as an answer. Callers bound every call with a deadline.
type ControllerClient interface {
	// RegisterBroker sends BrokerRegistration (62).
	RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error)
	// Heartbeat sends BrokerHeartbeat (63).
	Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error)
	// ControlledShutdown sends req as a heartbeat that asks to shut down
	// (WantShutdown): the controller moves the broker's leaderships in
	// one batch, and answers ShouldShutdown once every active broker has
	// applied it.
	ControlledShutdown(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error)
	// Admin sends any other of the ControllerKeys (CreateTopics,
	// DeleteTopics, CreatePartitions, ElectLeaders,
	// IncrementalAlterConfigs, AlterPartitionReassignments,
	// ListPartitionReassignments, AlterPartition, UnregisterBroker,
	// AllocateProducerIds, CreateAcls, DeleteAcls, AlterClientQuotas,
	// AlterUserScramCredentials).
	Admin(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	// AdminAt is Admin that also returns the metadata offset at which the
	// controller had committed the outcome (Active.DoAt), -1 when the
	// answer did not say (a request at a version without tagged fields,
	// or a NOT_CONTROLLER answer). A broker that has applied the offset
	// sees the change in its image.
	AdminAt(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error)
}

// attempt is one try of a request: the response and the offset its
// outcome committed at (-1 unknown), or an error with whether trying
// again (elsewhere, later) may help.
type attempt func(ctx context.Context, req kmsg.Request) (resp kmsg.Response, offset int64, retry bool, err error)

// retrier implements ControllerClient over attempts, retrying those that
// say NOT_CONTROLLER or failed in a way worth retrying.
type retrier struct {
	try        attempt
	minBackoff time.Duration
	maxBackoff time.Duration
}

func (r retrier) do(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
	if !isControllerKey(req.Key()) {
		return nil, -1, fmt.Errorf("%w: %s", ErrUnsupportedRequest, kmsg.NameForKey(req.Key()))
	}
	backoff := r.minBackoff
	var lastNotController kmsg.Response
	var lastErr error
	for {
		resp, offset, retry, err := r.try(ctx, req)
		switch {
		case err == nil && !IsNotController(resp):
			return resp, offset, nil
		case err == nil:
			lastNotController = resp
		case !retry:
			return nil, -1, err
		default:
			lastErr = err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			if lastNotController != nil {
				return lastNotController, -1, nil
			}
			return nil, -1, fmt.Errorf("kraft: no controller answered %s: %w (last error: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), lastErr)
		case <-t.C:
		}
		backoff = min(2*backoff, r.maxBackoff)
	}
}

func (r retrier) RegisterBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, error) {
	resp, _, err := r.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerRegistrationResponse), nil
}

func (r retrier) Heartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	resp, _, err := r.do(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.BrokerHeartbeatResponse), nil
}

func (r retrier) ControlledShutdown(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, error) {
	req.WantShutdown = true
	return r.Heartbeat(ctx, req)
}

func (r retrier) Admin(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, _, err := r.do(ctx, req)
	return resp, err
}

func (r retrier) AdminAt(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, error) {
	return r.do(ctx, req)
}

// Default retry backoff of the clients: short, because a controller
// failover takes well under a second and every retry is one small
// request.
const (
	defaultMinBackoff = 10 * time.Millisecond
	defaultMaxBackoff = 100 * time.Millisecond
)

// LocalClient is the ControllerClient of a broker whose controller may
// run in its own process: requests go to the Node's controller directly,
// and are retried while that node does not run the active controller (in
// a single-node cluster, until the node has elected itself).
type LocalClient struct{ retrier }

// NewLocalClient returns a client of n's controller.
func NewLocalClient(n *Node) *LocalClient {
	return &LocalClient{retrier{try: localAttempt(n), minBackoff: defaultMinBackoff, maxBackoff: defaultMaxBackoff}}
}

func localAttempt(n *Node) attempt {
	return func(ctx context.Context, req kmsg.Request) (kmsg.Response, int64, bool, error) {
		resp, offset, err := n.handleControllerRequest(ctx, req.Key(), req)
		return resp, offset, false, err
	}
}

// ListenerResolver resolves a node id to the address of its listener
// named listener() (read at each call: a broker learns its listeners once
// they are bound), from the registrations in n's image: the active
// controller's node is a broker too, registered with its listeners.
func ListenerResolver(n *Node, listener func() string) func(id int32) (string, bool) {
	return func(id int32) (string, bool) {
		b, ok := n.Image().Broker(id)
		if !ok {
			return "", false
		}
		name := listener()
		for _, e := range b.Endpoints {
			if e.Listener == name {
				return net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), true
			}
		}
		return "", false
	}
}
