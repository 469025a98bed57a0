package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ApiVersions v0-5. Out-of-range versions never reach here: the server
// answers them with the v0 fallback (KIP-511). The advertised list is
// derived from the handler table. Client software name/version (v3+) are
// accepted and not used.
var _ = register(handler{key: 18, min: 0, max: 5, serve: (*Broker).handleApiVersions})

func (b *Broker) handleApiVersions(_ context.Context, req *server.Request) *server.Reply {
	resp := req.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range versions() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	resp.FinalizedFeaturesEpoch = -1
	return server.Ready(resp)
}
