package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// FindCoordinator v0-6 (v4+ batches keys). A single node coordinates every
// group. weir has no transaction coordinator yet: transaction keys (type 1)
// get TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the answer InitProducerId
// gives a transactional id too, which clients treat as fatal at once
// instead of retrying until max.block.ms. Share keys (type 2,
// "group:topicId:partition", which locate a share partition's state) are
// coordinated here too: this node keeps the state of the share partitions
// it serves.
var _ = register(handler{key: 10, min: 0, max: 6, serve: (*Broker).handleFindCoordinator})

func (b *Broker) handleFindCoordinator(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	host, port := b.advertised()
	answer := func(keyType int8) (int16, *string) {
		switch keyType {
		case 0, 2:
		case 1:
			msg := "transactions are not supported by this broker"
			return kerr.TransactionalIDAuthorizationFailed.Code, &msg
		default:
			msg := "no coordinator of this key type on this broker"
			return kerr.CoordinatorNotAvailable.Code, &msg
		}
		return 0, nil
	}
	if r.Version < 4 {
		code, msg := answer(r.CoordinatorType)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		if code == 0 {
			resp.NodeID, resp.Host, resp.Port = b.cfg.NodeID, host, port
		} else {
			resp.NodeID, resp.Port = -1, -1
		}
		return server.Ready(resp)
	}
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key = key
		c.ErrorCode, c.ErrorMessage = answer(r.CoordinatorType)
		if c.ErrorCode == 0 {
			c.NodeID, c.Host, c.Port = b.cfg.NodeID, host, port
		} else {
			c.NodeID, c.Port = -1, -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return server.Ready(resp)
}
