package client

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
)

// Brokers a raw request can be sent to besides a node id.
const (
	// AnyBroker is whichever broker answers first (connected ones first).
	AnyBroker int32 = -1
	// ControllerBroker is the active controller, or any broker (which
	// forwards to it) when the controller does not answer.
	ControllerBroker int32 = -2
)

// ErrUnsupportedRequest is a request whose API the broker serves at no
// version this client can speak.
var ErrUnsupportedRequest = wire.ErrUnsupported

// Request sends req, a request built with kmsg, to node (a broker id,
// AnyBroker or ControllerBroker) and returns the broker's response. The
// typed methods cover the common calls; Request covers the rest of the
// protocol with the Admin's connections, version negotiation and
// timeouts. The version sent is the highest both sides speak (req's
// version field is overwritten), so the caller fills the fields of every
// version it may get. Error codes inside the response are the caller's to
// read.
func (a *Admin) Request(ctx context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	switch {
	case node == AnyBroker:
		resp, _, err := a.cl.doAny(ctx, req)
		return resp, err
	case node == ControllerBroker:
		return a.controllerDo(ctx, req)
	case node < 0:
		return nil, fmt.Errorf("client: no broker %d", node)
	}
	if err := a.cl.ensureBroker(ctx, node); err != nil {
		return nil, err
	}
	return a.cl.do(ctx, node, req)
}

// Coordinator types for Coordinator, as on the wire.
const (
	GroupCoordinator int8 = 0
	ShareCoordinator int8 = 2
)

// Coordinator returns the broker coordinating key: a group id with
// GroupCoordinator (classic, consumer and share groups alike).
func (a *Admin) Coordinator(ctx context.Context, key string, keyType int8) (int32, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	return a.cl.findCoordinator(ctx, key, keyType)
}
