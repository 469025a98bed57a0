package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/admission"
	"weir/internal/feature"
	"weir/internal/internaltopics"
	"weir/internal/server"
	"weir/internal/streamsgroup"
)

// StreamsGroupHeartbeat v0 (KIP-1071; v0 is what Kafka 4.3 clients
// speak): internal/group. The coordinator answers with the repartition
// and changelog topics the group lacks; they are created here in the
// background, as Kafka's broker does after its coordinator answers, and
// the group sees them through TopicsChanged. They are created only if
// the principal may CREATE all of them (on the cluster, or on each
// topic), as Kafka checks the whole set; otherwise the ones it may not
// are named in a MISSING_INTERNAL_TOPICS status and none is created.
// Refused with UNSUPPORTED_VERSION while streams.version is 0.
var _ = register(handler{key: 88, min: 0, max: 0, serve: groupCall(func(b *Broker, ctx context.Context, req *server.Request, r *kmsg.StreamsGroupHeartbeatRequest) (kmsg.Response, error) {
	if feature.LevelOf(b.image().FeatureLevels(), feature.StreamsVersion) < 1 {
		return streamsgroup.ErrorResponse(r.Version, kerr.UnsupportedVersion.Code, "The streams group protocol is disabled (streams.version 0)."), nil
	}
	resp, create, err := b.coord().StreamsGroupHeartbeat(ctx, groupClient(req), r)
	if err != nil {
		return nil, err
	}
	if len(create) == 0 {
		return resp, nil
	}
	names := make([]string, len(create))
	for i, t := range create {
		names[i] = t.Name
	}
	if _, denied := admission.VerdictOf(ctx).Checker.Creatable(names); len(denied) > 0 {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: streamsgroup.StatusMissingInternalTopics,
			StatusDetail: "Unauthorized to CREATE on topics " + strings.Join(denied, ", ") + "."})
		return resp, nil
	}
	for _, t := range create {
		b.autoTopics.EnsureAsync(internaltopics.Streams(b.settings(), t))
	}
	return resp, nil
})})
