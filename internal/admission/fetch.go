package admission

import (
	"context"
	"math"
	"time"

	"weir/internal/quota"
)

// fetchQuotaKey marks a consumer's fetch served under quotas; its value
// is the quota.Client the fetch's bytes count against.
type fetchQuotaKey struct{}

// FetchQuota records the bytes a consumer's fetch answers with against
// its consumer_byte_rate quota. Over the quota, the fetch is answered
// without records, as Kafka answers a throttled fetch: its bytes are
// taken back, and the throttle (the answer's throttle_time_ms and the
// connection's mute) is returned with true.
func (g *Gate) FetchQuota(ctx context.Context, bytes int64) (time.Duration, bool) {
	c, ok := ctx.Value(fetchQuotaKey{}).(quota.Client)
	quotas := g.image().ClientQuotas()
	if !ok || quotas.Len() == 0 || bytes <= 0 {
		return 0, false
	}
	now := g.now()
	d := g.quotas.Record(quotas, quota.Fetch, c, float64(bytes), now)
	if d <= 0 {
		return 0, false
	}
	g.quotas.Unrecord(quotas, quota.Fetch, c, float64(bytes), now)
	return d, true
}

// FetchLimit is the most a consumer's fetch may return under its
// consumer_byte_rate quota (math.MaxInt32 without one, and for a
// follower's fetch).
func (g *Gate) FetchLimit(ctx context.Context) int32 {
	c, ok := ctx.Value(fetchQuotaKey{}).(quota.Client)
	if !ok {
		return math.MaxInt32
	}
	return g.quotas.MaxFetchBytes(g.image().ClientQuotas(), c)
}
