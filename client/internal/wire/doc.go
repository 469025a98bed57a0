// Package wire is the client's connection to one Kafka broker: TCP framing,
// request headers, correlation ids, ApiVersions negotiation and pipelining.
//
// # What it owns, what it does not
//
// A Conn owns one TCP connection. Dial connects, sends ApiVersions (falling
// back to the version the broker names when it rejects ours) and records, per
// API key, the highest version both sides speak. After that any number of
// requests may be outstanding: each is written in the order it was handed
// over, and responses, which a Kafka broker sends in request order on a
// connection, are matched to the head of the pending queue by correlation
// id. A mismatch, a short read or a request past its timeout closes the
// connection and fails everything still pending with the cause; the caller
// decides whether to retry elsewhere. With Config.MaxIdle
// (connections.max.idle.ms) the writer also closes the connection, with
// ErrIdle, once nothing was handed over or answered for that long and
// nothing is queued or awaited; checked and closed under one lock, so no
// request handed over is failed by it. Request and response bodies are kmsg
// types; response frames are read and decoded by internal/kframe, shared
// with the inter-broker clients and the server.
//
// Not owned: which broker to talk to, metadata, retries, in-flight limits
// (the producer counts its own), authentication (plaintext only).
//
// # Concurrency
//
// Send and Do are safe for concurrent use. Each Conn runs two goroutines, a
// writer fed by a queue and a reader; Close stops both and waits for them.
// Callbacks run on the reader goroutine (or on the caller of Close when the
// connection dies) and must not block for long: they delay every later
// response on the same connection; they must not call Close. Lock order: Conn.mu is a leaf.
package wire
