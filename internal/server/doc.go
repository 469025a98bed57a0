// Package server is the Kafka protocol front end: it owns the TCP
// listeners, the connections, framing (a 4-byte big-endian length, then
// the message), request headers v0/v1/v2, the version checks, decoding
// request bodies with kmsg, and writing responses in request order.
//
// It does not own any broker state or decide any Kafka error code except
// UNSUPPORTED_VERSION for ApiVersions: the broker implements Dispatcher
// (the API keys and versions it serves, and Serve for one request) and
// everything behind it.
//
// # Listeners and their security
//
// A Server serves one or more named listeners (Config.Listeners), each on
// its own address and each with an optional Security: the connection
// edge that internal/auth implements for SSL, SASL_PLAINTEXT and
// SASL_SSL. On a new connection the reader first runs Security.Open (the
// TLS handshake, bounded by Config.HandshakeTimeout from the connection's
// first byte: a connection that sends nothing is idle, as on a listener
// without security, and one that closes so failed no handshake), which
// returns the connection to use and its Gate. The gate then sees every request before
// the dispatcher: Admit with the API key before the body is decoded (a
// request before authentication closes the connection unanswered, as
// Kafka closes it), Check with the decoded request (pass it on, answer it
// in the dispatcher's stead, as SaslHandshake and SaslAuthenticate are,
// or close). The principal the gate names is in every later request's
// ConnInfo, with the listener's name, so the broker authorizes and
// answers Metadata per listener without knowing how the client
// authenticated. The keys the edge serves are added to the listener's
// version table and to the dispatcher's ApiVersions answers.
//
// File ranges go out with sendfile only on plain TCP; over TLS they are
// read and written through the TLS connection (see copyfile.go).
//
// # Concurrency model
//
// Each connection has exactly two goroutines:
//
//   - The reader reads a frame, checks the key and version, decodes the
//     body and calls Dispatcher.Serve, one request at a time in arrival
//     order, then queues the returned Reply. Because Serve is sequential
//     per connection, work the broker does before Serve returns (log
//     appends, group state) happens in request order: this is what keeps
//     an idempotent producer's batches in sequence.
//   - The writer takes Replies off the queue in the same order, waits for
//     each one to complete (a Reply may complete after Serve returned: a
//     fetch long poll, an acks=all produce), and writes it. A later reply
//     that is ready waits behind an earlier pending one, as the protocol
//     requires.
//   - A Reply that is ready when Serve returns while the queue is empty
//     and the writer idle (no reply read and not yet written) is written
//     by the reader itself. Order holds (everything before it has been
//     written), and the common case of a client waiting for each answer
//     costs no wake-up of the writer. Stats.InlineReplies counts them.
//
// At most Config.MaxInFlight requests per connection are read and not yet
// answered; at the bound the reader stops reading, which pushes back on
// the client through TCP.
//
// A Reply may mute its connection (Reply.MuteUntil), as Kafka mutes the
// channel of a client over its quota: the reply goes out at once with
// its throttle_time_ms, and from the moment it is written the reader
// dispatches no request of the connection until the deadline passes (a
// request already read waits, unread bytes wait in TCP). Requests read
// and dispatched while an earlier reply was still pending are not held
// back: the mute is known only when that reply completes. Shutdown does
// not wait for a mute. Reply.Map lets a dispatcher change a reply's
// response before it is encoded (throttle times, authorization's
// additions), whenever the reply completes.
//
// This pipelines more than Kafka does: Kafka mutes a connection from the
// moment it has read a request until the response has been sent, so its
// broker never reads a connection's next request early; here the next
// request is read and decoded as soon as Serve returns, while earlier
// replies may still be pending or being written.
//
// # Frames
//
// A frame up to 1 MiB is read into one buffer of its size; larger ones
// grow as their bytes arrive. Decoded requests alias that buffer, so it
// is normally new for every request. A Dispatcher that implements
// FrameReuser names keys whose requests it never references after Serve
// returns (a produce handler that has appended the batches): frames of
// those keys are read into pooled power-of-two buffers (4 KiB to 1 MiB)
// that go back to the pool when Serve returns. A stream of 97 KiB
// produce requests then allocates about 600 bytes per request instead of
// 107 KiB (BenchmarkProduceFrames: 66-81 us/op fresh, 18-21 us/op
// reused). A request a dispatcher holds (Hold) keeps its frame.
//
// # Holding requests
//
// Hold is for a dispatcher that may not serve some requests yet (a
// broker still joining its cluster, whose metadata may be the last
// run's): it answers them with pending replies, keeps them in arrival
// order, and serves them in that order once opened, requests arriving
// meanwhile behind them, so a connection's requests keep their order.
// Kafka binds its listener early too and accepts only once started, the
// requests waiting in the listen backlog; closing them instead reads to
// franz-go as a first-read EOF, which it does not retry (it fails the
// records it has not sent). Past its bound, after Close, or for a
// connection gone while held, a request is closed as before.
//
// Bad input never reaches the broker: a frame size below the smallest
// header or above Config.MaxRequestSize, an unknown API key, an
// unsupported version (except ApiVersions, answered with the KIP-511
// fallback), a malformed header or body each log a warning and close the
// connection after the replies already queued are written, as Kafka,
// which reads one request at a time, would have written them first. A
// client that disconnects gets nothing more: its pending replies are
// abandoned and the context given to Serve is cancelled.
//
// One more goroutine per Server sweeps idle connections
// (Config.MaxIdle, Kafka's connections.max.idle.ms, 10 minutes by
// default): every quarter of MaxIdle (10 ms to 30 s) it closes the
// connections that have read no request since it last looked, for at
// least MaxIdle, and have every request answered. It reads two counters
// per connection that the reader and writer bump; it holds the server's
// lock only to list the connections, and tears them down with their
// context, as a client that disconnects does.
//
// Shutdown stops accepting and reading, lets queued replies complete and
// be written, then closes; when its context ends first, or when the
// context given to Serve is cancelled, connections are torn down at once.
// Every goroutine is waited for before Serve and Shutdown return.
//
// # Hostile bodies
//
// Request bodies are decoded by kmsg, which does not panic on hostile
// bytes but trusts declared sizes in two ways the frame size cap does not
// bound: it loops over a tagged-field section as many times as its count
// says even after the input ran out (a 24-byte frame declaring 2^32-1
// tags costs it over a minute of CPU), and it allocates an array from its
// declared count before reading the elements (tens of bytes per frame
// byte for Metadata topics in a frame that then runs short). Before kmsg
// sees a body, decode runs protocol.Check, which walks it with the exact
// schema of its key and version and refuses, as a malformed body, any
// length, count or tag that cannot fit in the bytes left: both frames are
// refused in microseconds (BenchmarkDecodeHostileTagCount,
// BenchmarkDecodeHostileArrayLength, TestDecodeRefusesHostileFrames).
//
// A body that passes is well formed, so kmsg's work and memory are those
// of a real request of its size, bounded by Config.MaxRequestSize. What
// remains is kmsg's in-memory form being larger than the wire form: an
// array of empty strings, one byte each when flexible, costs a 16-byte
// string header per element, and a 32-byte struct per two-byte Metadata v1
// topic name. Only a lower MaxRequestSize bounds that.
//
// Request headers are parsed here and have neither problem.
package server
