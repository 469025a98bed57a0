package admission

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/authz"
	"weir/internal/config"
	"weir/internal/kraft"
	"weir/internal/metadata"
	"weir/internal/quota"
	"weir/internal/server"
)

// Quotas is how the gate measures clients against their quotas: a
// *quota.Manager, whose methods take the image's quota set and the time.
type Quotas interface {
	Record(q *metadata.ClientQuotas, k quota.Kind, c quota.Client, value float64, now time.Time) time.Duration
	Unrecord(q *metadata.ClientQuotas, k quota.Kind, c quota.Client, value float64, now time.Time)
	RecordRequestTime(q *metadata.ClientQuotas, c quota.Client, spent time.Duration, now time.Time) time.Duration
	MaxFetchBytes(q *metadata.ClientQuotas, c quota.Client) int32
}

// Config is what a Gate needs.
type Config struct {
	// Settings holds the authorizer's and the quota windows' broker
	// configs; nil means Kafka's defaults (no authorizer).
	Settings *config.Broker
	// Image returns the node's current metadata image: its ACLs, client
	// quotas and topics. It is called once or twice per request and
	// must not return nil.
	Image func() *metadata.Image
	// Forwarded reports whether a request was forwarded by another
	// broker, which authorized its client; nil means none is.
	Forwarded func(*server.Request) bool
	// AutoCreateTopics is auto.create.topics.enable: Metadata may name
	// topics that do not exist yet, and their creation is checked.
	AutoCreateTopics bool
	// Quotas, when set, replaces the quota manager the settings build.
	Quotas Quotas
	// Now is the clock of request times and throttles; nil is time.Now.
	Now func() time.Time
}

// Gate authorizes requests before their handlers and throttles clients
// over their quotas after them.
type Gate struct {
	authz     *authz.Authorizer
	quotas    Quotas
	image     func() *metadata.Image
	forwarded func(*server.Request) bool
	autoTopic bool
	now       func() time.Time
}

// New reads the authorizer's configs and quota.window.num and
// quota.window.size.seconds from cfg.Settings.
func New(cfg Config) (*Gate, error) {
	get := func(name string) (string, bool) {
		if cfg.Settings == nil {
			return "", false
		}
		v, ok := cfg.Settings.Value(name)
		if !ok || v.IsNull() {
			return "", false
		}
		return v.String(), true
	}
	ac, err := authz.ParseConfig(get)
	if err != nil {
		return nil, err
	}
	g := &Gate{authz: authz.New(ac), quotas: cfg.Quotas, image: cfg.Image, forwarded: cfg.Forwarded, autoTopic: cfg.AutoCreateTopics, now: cfg.Now}
	if g.quotas == nil {
		qc, err := quota.ParseConfig(get)
		if err != nil {
			return nil, err
		}
		g.quotas = quota.NewManager(qc)
	}
	if g.forwarded == nil {
		g.forwarded = func(*server.Request) bool { return false }
	}
	if g.now == nil {
		g.now = time.Now
	}
	return g, nil
}

// Serve authorizes req, serves what is allowed with serve and throttles
// the client over its quotas. A request forwarded by another broker is
// served whole once that broker's principal has CLUSTER_ACTION, as Kafka
// asks of an Envelope. serve must not keep its function value: Serve
// keeps its closure off the heap.
func (g *Gate) Serve(ctx context.Context, req *server.Request, serve func(context.Context, *server.Request) *server.Reply) *server.Reply {
	img := g.image()
	if !g.authz.Enabled() && img.ClientQuotas().Len() == 0 {
		// Nothing to authorize and nobody to throttle: the common case
		// costs a request nothing.
		return serve(ctx, req)
	}
	start := g.now()
	s := session(req)
	chk := g.authz.For(img, s)
	if g.forwarded(req) {
		if !chk.AllowedCluster(authz.OpClusterAction) {
			return server.Ready(kraft.ErrorResponse(req.Body, kerr.ClusterAuthorizationFailed.Code))
		}
		return serve(ctx, req)
	}
	v := authz.Authorize(chk, authz.Env{Topics: authz.ImageTopics(img), AutoCreateTopics: g.autoTopic}, req.Body)
	if g.authz.Enabled() {
		v.Checker = chk
	}
	if v.Reject != nil {
		return g.throttle(server.Ready(v.Reject), req, s, start, 0)
	}
	if v.Request != req.Body {
		cp := *req
		cp.Body = v.Request
		req = &cp
	}
	ctx = context.WithValue(ctx, admittedKey{}, admitted{verdict: v, checker: chk})
	if f, ok := req.Body.(*kmsg.FetchRequest); ok && !followerFetch(f) {
		ctx = context.WithValue(ctx, fetchQuotaKey{}, quotaClient(req, s))
	}
	reply := serve(ctx, req)
	if v.Finishes {
		reply.Map(v.Finish)
	}
	var produced float64
	if req.Key == 0 {
		produced = float64(req.Size)
	}
	return g.throttle(reply, req, s, start, produced)
}

// throttle records a served request's time (and a produce request's
// bytes) against the client's quotas and, over a quota, sets the
// answer's throttle time and mutes the connection until it passes.
func (g *Gate) throttle(reply *server.Reply, req *server.Request, s authz.Session, start time.Time, produced float64) *server.Reply {
	quotas := g.image().ClientQuotas()
	if quotas.Len() == 0 {
		return reply
	}
	now := g.now()
	c := quotaClient(req, s)
	var d time.Duration
	if produced > 0 {
		d = g.quotas.Record(quotas, quota.Produce, c, produced, now)
	}
	if !quota.RequestQuotaExempt(req.Key, req.Key == 1 && followerFetch(req.Body.(*kmsg.FetchRequest))) {
		d = max(d, g.quotas.RecordRequestTime(quotas, c, now.Sub(start), now))
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

// followerFetch reports whether a fetch comes from a follower replica
// (ReplicaState from v15, ReplicaID before) rather than a consumer.
func followerFetch(r *kmsg.FetchRequest) bool {
	if r.Version >= 15 {
		return r.ReplicaState.ID >= 0
	}
	return r.ReplicaID >= 0
}

// admitted is what Serve hands a handler through its context: the
// request's verdict and the checker that decided it.
type admitted struct {
	verdict authz.Verdict
	checker *authz.Checker
}

type admittedKey struct{}

// VerdictOf is the authorization of the request a handler serves, for
// handlers that encode their answer themselves (Fetch, ShareFetch): they
// pass their response through its Finish before encoding it. Without
// authorization its Finish returns its argument.
func VerdictOf(ctx context.Context) authz.Verdict {
	if a, ok := ctx.Value(admittedKey{}).(admitted); ok {
		return a.verdict
	}
	return authz.Verdict{Finish: func(r kmsg.Response) kmsg.Response { return r }}
}

// DescribableTopics is the DESCRIBE filter of the principal a request
// comes from (authz.Checker.DescribableTopics), for what a handler's
// service must filter itself: the topics a consumer group's
// subscription regex resolves to. It is nil when no authorizer is on.
func DescribableTopics(ctx context.Context) func(names []string) []string {
	if a, ok := ctx.Value(admittedKey{}).(admitted); ok && a.checker.Enabled() {
		return a.checker.DescribableTopics
	}
	return nil
}
