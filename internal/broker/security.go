package broker

import (
	"context"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/scram"
	"weir/internal/authz"
	"weir/internal/config"
	"weir/internal/kraft"
	"weir/internal/metadata"
	"weir/internal/quota"
	"weir/internal/server"
)

// Authorization and client quotas around every handler: Serve asks
// internal/authz what the request's principal may do before a handler
// sees the request (the handler serves only what is allowed; what is not
// answers Kafka's *_AUTHORIZATION_FAILED codes or stays hidden) and asks
// internal/quota how long to throttle the client once it has been
// served (the answer carries throttle_time_ms and the connection is
// muted until then).

// newAuthorizer reads the authorizer's broker configs.
func newAuthorizer(s *config.Broker) (*authz.Authorizer, error) {
	cfg, err := authz.ParseConfig(func(name string) (string, bool) {
		v, ok := s.Value(name)
		if !ok || v.IsNull() {
			return "", false
		}
		return v.String(), true
	})
	if err != nil {
		return nil, err
	}
	return authz.New(cfg), nil
}

// newQuotas reads quota.window.num and quota.window.size.seconds.
func newQuotas(s *config.Broker) *quota.Manager {
	return quota.NewManager(quota.Config{
		Samples: int(s.Int(config.QuotaWindowNum)),
		Window:  time.Duration(s.Int(config.QuotaWindowSizeSeconds)) * time.Second,
	})
}

// session is who a request comes from: the listener's principal (a
// connection without authentication is User:ANONYMOUS, as in Kafka) and
// the client's address as ACL hosts name it.
func session(req *server.Request) authz.Session {
	s := authz.Session{Principal: authz.Anonymous}
	if p, err := authz.ParsePrincipal(req.Conn.Principal); err == nil {
		s.Principal = p
	}
	if a, ok := req.Conn.Remote.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			s.Host = authz.Host(ip.WithZone(a.Zone))
		}
	}
	return s
}

// quotaClient is who a request's quotas apply to: the principal's name
// and the client id.
func quotaClient(req *server.Request, s authz.Session) quota.Client {
	return quota.Client{User: s.Principal.Name, ClientID: req.ClientID}
}

type verdictKey struct{}

// verdictOf is the authorization of the request a handler serves, for
// handlers that encode their answer themselves (Fetch, ShareFetch): they
// pass their response through its Finish before encoding it.
func verdictOf(ctx context.Context) authz.Verdict {
	if v, ok := ctx.Value(verdictKey{}).(authz.Verdict); ok {
		return v
	}
	return authz.Verdict{Finish: func(r kmsg.Response) kmsg.Response { return r }}
}

// serveAuthorized authorizes a request, serves what is allowed and
// throttles the client over its quotas.
func (b *Broker) serveAuthorized(ctx context.Context, h handler, req *server.Request) *server.Reply {
	img := b.img.Load()
	if !b.authz.Enabled() && img.ClientQuotas().Len() == 0 {
		// Nothing to authorize and nobody to throttle: the common case
		// costs a request nothing.
		if fromBroker(req) {
			return b.handleControllerRequest(ctx, req)
		}
		return h.serve(b, ctx, req)
	}
	start := time.Now()
	s := session(req)
	chk := b.authz.For(img, s)
	if fromBroker(req) {
		// Forwarded by another broker, which authorized the client: the
		// forwarding broker needs CLUSTER_ACTION, as Kafka asks of an
		// Envelope.
		if !chk.AllowedCluster(authz.OpClusterAction) {
			return server.Ready(kraft.ErrorResponse(req.Body, kerr.ClusterAuthorizationFailed.Code))
		}
		return b.handleControllerRequest(ctx, req)
	}
	v := authz.Authorize(chk, authz.Env{Topics: authz.ImageTopics(img), AutoCreateTopics: b.cfg.AutoCreateTopics}, req.Body)
	if v.Reject != nil {
		return b.throttle(server.Ready(v.Reject), req, s, start, 0)
	}
	if v.Request != req.Body {
		cp := *req
		cp.Body = v.Request
		req = &cp
	}
	ctx = context.WithValue(ctx, verdictKey{}, v)
	if f, ok := req.Body.(*kmsg.FetchRequest); ok && fetchReplicaID(f) < 0 {
		ctx = context.WithValue(ctx, fetchQuotaKey{}, fetchQuotaInfo{client: quotaClient(req, s)})
	}
	reply := h.serve(b, ctx, req)
	if v.Finishes {
		reply.Map(v.Finish)
	}
	var produced float64
	if req.Key == 0 {
		produced = float64(req.Size)
	}
	return b.throttle(reply, req, s, start, produced)
}

// throttle records a served request's time (and a produce request's
// bytes) against the client's quotas and, over a quota, sets the
// answer's throttle time and mutes the connection until it passes.
func (b *Broker) throttle(reply *server.Reply, req *server.Request, s authz.Session, start time.Time, produced float64) *server.Reply {
	quotas := b.img.Load().ClientQuotas()
	if quotas.Len() == 0 {
		return reply
	}
	now := time.Now()
	c := quotaClient(req, s)
	var d time.Duration
	if produced > 0 {
		d = b.quotas.Record(quotas, quota.Produce, c, produced, now)
	}
	if !quota.RequestQuotaExempt(req.Key, req.Key == 1 && fetchReplicaID(req.Body.(*kmsg.FetchRequest)) >= 0) {
		d = max(d, b.quotas.RecordRequestTime(quotas, c, now.Sub(start), now))
	}
	if d <= 0 {
		return reply
	}
	ms := int32(d.Milliseconds())
	return reply.MuteUntil(now.Add(d)).Map(func(r kmsg.Response) kmsg.Response {
		if t, ok := r.(kmsg.SetThrottleResponse); ok {
			if old, _ := r.(kmsg.ThrottleResponse).Throttle(); old < ms {
				t.SetThrottle(ms)
			}
		}
		return r
	})
}

// fetchQuota records the bytes a consumer's fetch answers with against
// its consumer_byte_rate quota. Over the quota, the fetch is answered
// without records, as Kafka answers a throttled fetch, its bytes are
// taken back, and the throttle and the mute are returned.
func (b *Broker) fetchQuota(ctx context.Context, bytes int64) (time.Duration, bool) {
	fq, ok := ctx.Value(fetchQuotaKey{}).(fetchQuotaInfo)
	quotas := b.img.Load().ClientQuotas()
	if !ok || quotas.Len() == 0 || bytes <= 0 {
		return 0, false
	}
	now := time.Now()
	d := b.quotas.Record(quotas, quota.Fetch, fq.client, float64(bytes), now)
	if d <= 0 {
		return 0, false
	}
	b.quotas.Unrecord(quotas, quota.Fetch, fq.client, float64(bytes), now)
	return d, true
}

// fetchLimit is the most a consumer's fetch may return under its
// consumer_byte_rate quota (math.MaxInt32 without one).
func (b *Broker) fetchLimit(ctx context.Context) int32 {
	fq, ok := ctx.Value(fetchQuotaKey{}).(fetchQuotaInfo)
	if !ok {
		return math.MaxInt32
	}
	return b.quotas.MaxFetchBytes(b.img.Load().ClientQuotas(), fq.client)
}

type fetchQuotaKey struct{}

type fetchQuotaInfo struct{ client quota.Client }

// ScramCredential is a user's SCRAM credential for a mechanism
// ("SCRAM-SHA-256", "SCRAM-SHA-512") from this node's metadata image:
// the lookup a listener's SCRAM server uses (auth.Deps.ScramCredential).
func (b *Broker) ScramCredential(mechanism, user string) (scram.Credential, bool) {
	img := b.img.Load()
	m, ok := metadata.ScramMechanismByName(mechanism)
	if img == nil || !ok {
		return scram.Credential{}, false
	}
	c, ok := img.ScramCredential(user, m)
	if !ok {
		return scram.Credential{}, false
	}
	return scram.Credential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: int(c.Iterations)}, true
}
