package client

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminRequestRoutes: a raw request goes to the node named, to the
// controller named by metadata, or to any broker; a negative id that is
// neither selector is refused without a request.
func TestAdminRequestRoutes(t *testing.T) {
	a := newTwoNodeAdmin(t, &twoNodeFake{})
	ctx := context.Background()
	answeredBy := func(node int32) string {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		req.Resources = append(req.Resources, r)
		resp, err := a.Request(ctx, node, req)
		if err != nil {
			t.Fatalf("node %d: %v", node, err)
		}
		return *resp.(*kmsg.DescribeConfigsResponse).Resources[0].Configs[0].Value
	}
	for _, tc := range []struct {
		node int32
		want string
	}{{0, "0"}, {1, "1"}, {ControllerBroker, "1"}, {0, "0"}} {
		if got := answeredBy(tc.node); got != tc.want {
			t.Errorf("Request to %d answered by node %s, want %s", tc.node, got, tc.want)
		}
	}
	if got := answeredBy(AnyBroker); got != "0" && got != "1" {
		t.Errorf("AnyBroker answered by %q", got)
	}
	if _, err := a.Request(ctx, -7, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Error("Request to node -7 did not fail")
	}
	if _, err := a.Request(ctx, 9, kmsg.NewPtrMetadataRequest()); err == nil {
		t.Error("Request to a node not in metadata did not fail")
	}
}
