// Package quota is Kafka's client quotas: which entities carry quotas
// and what values they may hold, DescribeClientQuotas over the metadata
// image, and enforcement as a pure core.
//
// # What it owns
//
//   - Entities and values (entity.go): parsing and validating the
//     entities of AlterClientQuotas and DescribeClientQuotas (user,
//     client-id, both, or ip; names or the <default>) and the quota keys
//     producer_byte_rate, consumer_byte_rate, request_percentage,
//     controller_mutation_rate and connection_creation_rate, with
//     Kafka's messages; answering DescribeClientQuotas from the image.
//   - Which quota a client has (limits.go): Kafka's precedence from
//     (user, client id) down to the default client id, and which
//     clients share a rate (all client ids of a user with a user quota,
//     and so on), from the quotas of the current image.
//   - Rates and throttle times (rate.go, manager.go): Kafka's windowed
//     rate (quota.window.num windows of quota.window.size.seconds) and
//     its throttle time, the time that brings a client's rate back to
//     its quota: (rate - quota) / quota * window span. Produce records
//     request bytes, fetch response bytes (taken back when the fetch is
//     throttled and answered empty), request_percentage the broker's
//     time on the request (throttles bounded by one window). A fetch is
//     capped at what its quota allows in samples-1 windows.
//     testdata/manager holds Kafka's own test scenarios as transcripts,
//     with the throttle times Kafka asserts (2100 ms, 210 ms).
//
// # What it does not own
//
// Storing quotas (records of the metadata log, internal/metadata,
// written by internal/controller) and the network: the broker answers
// with the throttle time computed here (throttle_time_ms) and asks the
// server to read nothing more from the connection until it has passed
// (internal/server, Reply.MuteUntil). ip quotas (connection_creation_rate)
// and controller_mutation_rate are stored and described, not enforced.
//
// # Concurrency
//
// A Manager has one mutex, a leaf: the rates of its clients and the
// resolution of the last quota set it saw. Time and quotas come in with
// every call; it starts no goroutine, and drops a client's rate an hour
// after its last record, as Kafka expires its quota sensors.
package quota
