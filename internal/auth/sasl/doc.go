// Package sasl is the contract between the SASL state machine at weir's
// connection edge (internal/auth) and the mechanisms behind it, plus the
// one mechanism too small for a package of its own, PLAIN (RFC 4616).
//
// A mechanism is a pair of conversations, pure state machines fed with
// the peer's tokens:
//
//   - Server consumes the client's tokens (the auth_bytes of SaslAuthenticate
//     requests) and answers with challenges until it is Done or fails; once
//     done, it names the authenticated user and, when the credential
//     expires (an OAUTHBEARER token), when.
//   - Client produces the tokens a client sends, for weir's own client and
//     its inter-broker connections.
//
// A failure is either a *Failure, whose message Kafka lets the client see
// (SaslAuthenticationException: "Authentication failed: Invalid username
// or password"), or any other error, which the edge reports to the client
// with Kafka's generic text so that nothing about the user store leaks.
//
// # What it does not own
//
// Reading credentials (JAAS configuration, the SCRAM credentials of the
// metadata log) and choosing the mechanism: the caller gives each server
// conversation what it needs to check a client.
//
// # Concurrency
//
// A conversation belongs to one connection and is not safe for concurrent
// use; lookups it is given may be called from any connection.
package sasl
