package broker

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/group"
	"weir/internal/server"
)

// The group APIs are answered by internal/group; their handlers (08, 09,
// 11-16, 42, 47, 68, 69) only route requests to it with the helpers
// below. JoinGroup and SyncGroup wait for other members, so they run off
// the request path; the rest answer at once. Version ranges: the Kafka
// 4.x floor up to what kmsg defines.

type groupFunc[R kmsg.Request] func(b *Broker, ctx context.Context, req *server.Request, r R) (kmsg.Response, error)

// groupCall answers at once. An error means the call was cancelled (the
// connection is going); the connection is then closed.
func groupCall[R kmsg.Request](fn groupFunc[R]) func(*Broker, context.Context, *server.Request) *server.Reply {
	return func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
		if resp, ok := b.notCoordinated(req.Body); ok {
			return server.Ready(resp)
		}
		resp, err := fn(b, ctx, req, req.Body.(R))
		if err != nil {
			return server.CloseConnection()
		}
		return server.Ready(resp)
	}
}

// waitingGroupCall runs a call that may wait for other members off the
// request path.
func waitingGroupCall[R kmsg.Request](fn groupFunc[R]) func(*Broker, context.Context, *server.Request) *server.Reply {
	return func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
		if resp, ok := b.notCoordinated(req.Body); ok {
			return server.Ready(resp)
		}
		r := req.Body.(R)
		return b.async(ctx, func(ctx context.Context) kmsg.Response {
			resp, err := fn(b, ctx, req, r)
			if err != nil {
				return nil
			}
			return resp
		})
	}
}

// groupClient describes the requesting client as Kafka reports it in
// DescribeGroups ("/127.0.0.1").
func groupClient(req *server.Request) group.Client {
	host := ""
	if req.Conn.Remote != nil {
		if h, _, err := net.SplitHostPort(req.Conn.Remote.String()); err == nil {
			host = "/" + h
		}
	}
	return group.Client{ID: req.ClientID, Host: host}
}

// notCoordinated answers a group request for a group another node
// coordinates (or none yet) with NOT_COORDINATOR, so the client looks the
// coordinator up again; ok is false when this node coordinates it.
func (b *Broker) notCoordinated(body kmsg.Request) (kmsg.Response, bool) {
	return group.NotCoordinated(body, b.coordinates)
}
