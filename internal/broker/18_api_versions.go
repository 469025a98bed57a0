package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/feature"
	"weir/internal/server"
)

// ApiVersions v0-5. Out-of-range versions never reach here: the server
// answers them with the v0 fallback (KIP-511). The advertised list is
// derived from the handler table. From v3, the supported features and
// the finalized ones (internal/feature's defaults under the levels the
// metadata log recorded, epoch the image's offset, as Kafka's) are
// listed. Client software name/version (v3+) are accepted and not used.
var _ = register(handler{key: 18, min: 0, max: 5, serve: (*Broker).handleApiVersions})

func (b *Broker) handleApiVersions(_ context.Context, req *server.Request) *server.Reply {
	resp := req.Body.ResponseKind().(*kmsg.ApiVersionsResponse)
	for _, v := range versions() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = v.Key, v.Min, v.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	img := b.image()
	if img == nil {
		resp.FinalizedFeaturesEpoch = -1
		return server.Ready(resp)
	}
	for _, f := range feature.Supported {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	resp.FinalizedFeaturesEpoch = max(img.Offset(), 0)
	for _, l := range feature.Finalized(img.FeatureLevels()) {
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = l.Name, l.Level, l.Level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	return server.Ready(resp)
}
