package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// ApiVersions v0-5. Out-of-range versions never reach here: the server
// answers them with the v0 fallback (KIP-511). The advertised list is
// derived from the handler table. Client software name/version (v3+) are
// accepted and not used. v3+ carries the features the cluster finalizes:
// transaction.version at TransactionVersion (KIP-890: clients then use
// Produce v12 and EndTxn v5), the epoch being the metadata offset.
var _ = register(handler{key: 18, min: 0, max: 5, serve: (*Broker).handleApiVersions})

func (b *Broker) handleApiVersions(_ context.Context, req *server.Request) *server.Reply {
	resp := req.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range versions() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	resp.FinalizedFeaturesEpoch = -1
	if req.Version >= 3 {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = transactionVersionFeature, 0, TransactionVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = transactionVersionFeature, TransactionVersion, TransactionVersion
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		resp.FinalizedFeaturesEpoch = max(b.image().Offset(), 0)
	}
	return server.Ready(resp)
}
