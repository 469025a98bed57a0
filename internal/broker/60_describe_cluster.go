package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// DescribeCluster v0-2. Only the broker endpoint type (1) is served; a
// request for controller endpoints (2) gets UNSUPPORTED_ENDPOINT_TYPE as
// from a Kafka broker. Authorized operations are not computed (no ACLs).
var _ = register(handler{key: 60, min: 0, max: 2, serve: (*Broker).handleDescribeCluster})

func (b *Broker) handleDescribeCluster(_ context.Context, req *server.Request) *server.Reply {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = 1
	if r.Version >= 1 && r.EndpointType != 1 {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		return server.Ready(resp)
	}
	resp.ClusterID = b.clusterID
	resp.ControllerID = controllerForClients(b.image(), b.node.Leader(), b.cfg.NodeID)
	for _, br := range b.image().Brokers() {
		mb, ok := b.endpointFor(br, req.Conn.Listener)
		if !ok || br.Fenced {
			continue
		}
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port, db.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
		resp.Brokers = append(resp.Brokers, db)
	}
	return server.Ready(resp)
}
