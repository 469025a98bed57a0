// Package delayproxy is a TCP proxy in front of one Kafka broker that
// makes it slow the way KIP-794's test made one broker slow: the
// responses of chosen API keys (Produce, Fetch) leave one after another
// per connection, each a fixed delay late. It lets a scenario slow a
// broker that has no fault injection of its own (Apache Kafka), the same
// way weir's weir.fault.produce.response.delay.ms does inside the broker
// (internal/fault), so the two compare.
//
// # What it owns
//
// The listener, one upstream connection per client connection, and the
// Kafka framing (4-byte length prefix; a request's API key and
// correlation id at the start of its header, a response's correlation id
// at the start of its). It reads nothing else: bodies pass through
// untouched, so any version of any API does. The broker must advertise
// the proxy's address for clients to come through it.
//
// # Concurrency
//
// One accept goroutine; per connection two relaying goroutines (requests
// up, responses down), which Close ends and waits for. Delays are atomics,
// changed at any time. A connection's correlation ids live in a sync.Map
// shared by its two goroutines; a request without a response (acks=0)
// leaves its entry until the connection closes.
package delayproxy
