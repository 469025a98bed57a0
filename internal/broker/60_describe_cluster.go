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
	host, port := b.advertised()
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.cfg.NodeID
	br := kmsg.NewDescribeClusterResponseBroker()
	br.NodeID, br.Host, br.Port = b.cfg.NodeID, host, port
	if b.cfg.Rack != "" {
		br.Rack = &b.cfg.Rack
	}
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{br}
	return server.Ready(resp)
}
