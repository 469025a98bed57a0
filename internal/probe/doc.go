// Package probe tells whether a process listens on a TCP address, from a
// connection attempt: accepted, refused (nothing listens: the process
// exited or was killed), or unknown (a timeout or another error, which
// proves nothing: a slow, paused or unreachable process looks the same).
//
// # What it owns
//
// The one rule that turns a dial into that answer. The active
// controller's liveness loop (internal/broker) and the quorum's election
// watch (internal/quorum) decide on it.
//
// # What it does not own
//
// What is done with the answer, how often to ask, or the connection
// (closed at once: nothing is sent on it).
//
// # Concurrency
//
// Stateless; safe from any goroutine.
package probe
