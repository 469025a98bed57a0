// Package probe tells whether a process listens on a TCP address, from a
// connection attempt: accepted, refused (nothing listens: the process
// exited or was killed), or unknown (a timeout or another error, which
// proves nothing: a slow, paused or unreachable process looks the same).
//
// # What it owns
//
// The one rule that turns a dial into that answer, and held connections
// (Hold) that say when the process at the other end goes without a dial
// every few hundred milliseconds. The active controller's liveness loop
// (internal/broker) and the quorum's election watch (internal/quorum)
// decide on them.
//
// # What it does not own
//
// What is done with the answer, how often to ask, or the connection
// (closed at once: nothing is sent on it).
//
// # Concurrency
//
// Dial is stateless and safe from any goroutine. A held Conn has one
// reader goroutine, which Close stops and waits for; its owner closes it.
package probe
