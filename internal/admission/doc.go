// Package admission is the gate every request passes on its way to a
// broker handler: Kafka's authorization of a request (what KafkaApis
// asks its Authorizer through AuthHelper before handling an API) and its
// client quotas (the throttle times of ClientQuotaManager and
// ClientRequestQuotaManager, which RequestHandlerHelper puts in the
// answer and waits out before reading the connection again).
//
// # What it owns
//
//   - The decision flow of one request (gate.go, Gate.Serve): who it
//     comes from (the listener's principal, User:ANONYMOUS without
//     authentication, and the client's host as ACLs name it), the
//     CLUSTER_ACTION a forwarding broker needs, authz.Authorize's
//     verdict (a whole-request rejection, or the request without its
//     denied items and the Finish that completes the handler's answer),
//     and the throttle once the request is served: produce bytes and the
//     time spent against the client's quotas, throttle_time_ms raised in
//     the answer and the connection muted until it has passed.
//   - A consumer fetch's byte quota (fetch.go): the most a fetch may
//     return under consumer_byte_rate, and the throttle of a fetch over
//     it, whose bytes are taken back (Kafka answers it without records).
//   - The broker configs that build both: authorizer.class.name,
//     super.users, allow.everyone.if.no.acl.found, quota.window.num and
//     quota.window.size.seconds (New).
//
// With no authorizer configured and no client quota in the image, a
// request goes straight to its handler: no session, no context value,
// no allocation.
//
// # What it does not own
//
// The decisions themselves (internal/authz: what each API checks, as
// pure functions of the image's ACLs), the rates and throttle times
// (internal/quota), who the principal is (the listener's
// authentication, internal/auth), the mute (internal/server,
// Reply.MuteUntil) and the handlers, which the broker passes in as a
// function. It never imports internal/broker.
//
// The broker calls it so:
//
//	gate, err := admission.New(admission.Config{Settings: s, Image: b.img.Load, Forwarded: fromBroker})
//	reply := gate.Serve(ctx, req, func(ctx context.Context, req *server.Request) *server.Reply { ... })
//	limit := gate.FetchLimit(ctx)              // in Fetch, before reading
//	d, throttled := gate.FetchQuota(ctx, n)    // in Fetch, before answering
//	admission.VerdictOf(ctx).Finish(resp)      // Fetch and ShareFetch encode their own answer
//	admission.DescribableTopics(ctx)           // ConsumerGroupHeartbeat: the filter of regex topics
//
// # Concurrency
//
// A Gate is safe for concurrent use and starts no goroutine. It keeps no
// state of its own: the authorizer caches the index of the last ACL set
// in an atomic pointer, the quota manager holds its rates under its one
// leaf mutex, and the image comes from Config.Image at each call.
package admission
