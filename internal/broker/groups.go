package broker

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/group"
	"weir/internal/server"
)

// The group APIs are answered by internal/group; these handlers only route
// requests to it. JoinGroup and SyncGroup wait for other members, so they
// run off the request path; the rest answer at once. Version ranges: the
// Kafka 4.x floor up to what kmsg defines (JoinGroup from v0 again, as
// Kafka 4.1+ does for old librdkafka, KAFKA-19444).
var (
	_ = register(handler{key: 11, min: 0, max: 9, serve: waitingGroupCall(func(b *Broker, ctx context.Context, req *server.Request, r *kmsg.JoinGroupRequest) (kmsg.Response, error) {
		return b.groups.JoinGroup(ctx, groupClient(req), r)
	})})
	_ = register(handler{key: 14, min: 0, max: 5, serve: waitingGroupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.SyncGroupRequest) (kmsg.Response, error) {
		return b.groups.SyncGroup(ctx, r)
	})})
	_ = register(handler{key: 12, min: 0, max: 4, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.HeartbeatRequest) (kmsg.Response, error) {
		return b.groups.Heartbeat(ctx, r)
	})})
	_ = register(handler{key: 13, min: 0, max: 5, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
		return b.groups.LeaveGroup(ctx, r)
	})})
	_ = register(handler{key: 8, min: 2, max: 10, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
		return b.groups.OffsetCommit(ctx, r)
	})})
	_ = register(handler{key: 9, min: 1, max: 10, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
		return b.groups.OffsetFetch(ctx, r)
	})})
	_ = register(handler{key: 47, min: 0, max: 0, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
		return b.groups.OffsetDelete(ctx, r)
	})})
	// DescribeGroups, ListGroups and DeleteGroups cover share groups too
	// (share_groups.go).
	_ = register(handler{key: 15, min: 0, max: 6, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
		return b.describeGroups(ctx, r)
	})})
	_ = register(handler{key: 16, min: 0, max: 5, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.ListGroupsRequest) (kmsg.Response, error) {
		return b.listGroups(ctx, r)
	})})
	_ = register(handler{key: 42, min: 0, max: 3, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
		return b.deleteGroups(ctx, r)
	})})
	_ = register(handler{key: 68, min: 0, max: 1, serve: groupCall(func(b *Broker, ctx context.Context, req *server.Request, r *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
		return b.groups.ConsumerGroupHeartbeat(ctx, groupClient(req), r)
	})})
	_ = register(handler{key: 69, min: 0, max: 1, serve: groupCall(func(b *Broker, ctx context.Context, _ *server.Request, r *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
		return b.groups.ConsumerGroupDescribe(ctx, r)
	})})
)

type groupFunc[R kmsg.Request] func(b *Broker, ctx context.Context, req *server.Request, r R) (kmsg.Response, error)

// groupCall answers at once. An error means the call was cancelled (the
// connection is going); the connection is then closed.
func groupCall[R kmsg.Request](fn groupFunc[R]) func(*Broker, context.Context, *server.Request) *server.Reply {
	return func(b *Broker, ctx context.Context, req *server.Request) *server.Reply {
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
