package admission

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/server"
)

// A consumer's fetch is capped at its quota's bytes and, over the
// quota, throttled with its bytes taken back; a follower's fetch and a
// fetch without client quotas are neither.
func TestFetchQuota(t *testing.T) {
	for _, tc := range []struct {
		name      string
		follower  bool
		quotas    bool
		bytes     int64
		throttle  time.Duration // the quota manager's answer
		limit     int32
		throttled bool
		calls     []string
	}{
		{"within the quota", false, true, 500, 0, 4096, false,
			[]string{"max-fetch alice/c1", "record Fetch alice/c1 500"}},
		{"over the quota", false, true, 500, 200 * time.Millisecond, 4096, true,
			[]string{"max-fetch alice/c1", "record Fetch alice/c1 500", "unrecord Fetch alice/c1 500"}},
		{"nothing read", false, true, 0, 200 * time.Millisecond, 4096, false,
			[]string{"max-fetch alice/c1"}},
		{"a follower", true, true, 500, 200 * time.Millisecond, math.MaxInt32, false, nil},
		{"no client quota", false, false, 500, 200 * time.Millisecond, math.MaxInt32, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := metadata.Empty()
			if tc.quotas {
				img = image(t, aliceQuota)
			}
			q := &fakeQuotas{fetch: tc.throttle, maxFetch: 4096}
			g := newGate(t, gateOpts{img: img}, q)
			f := kmsg.NewPtrFetchRequest()
			f.Version, f.ReplicaState.ID = 15, -1
			if tc.follower {
				f.ReplicaState.ID = 2
			}
			var limit int32
			var d time.Duration
			var throttled bool
			g.Serve(context.Background(), request("User:alice", "c1", f), func(ctx context.Context, req *server.Request) *server.Reply {
				limit = g.FetchLimit(ctx)
				d, throttled = g.FetchQuota(ctx, tc.bytes)
				return server.Ready(req.Body.ResponseKind())
			})
			if limit != tc.limit || throttled != tc.throttled || (throttled && d != tc.throttle) || (!throttled && d != 0) {
				t.Errorf("limit %d, throttle %v %v; want %d, %v %v", limit, d, throttled, tc.limit, tc.throttle, tc.throttled)
			}
			// The request's own time is recorded after the handler.
			calls := slices.DeleteFunc(q.calls, func(c string) bool { return strings.HasPrefix(c, "request ") })
			if !slices.Equal(calls, tc.calls) {
				t.Errorf("quota calls %q, want %q", calls, tc.calls)
			}
		})
	}
}
