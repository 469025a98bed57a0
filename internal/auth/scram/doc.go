// Package scram is SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677)
// as Kafka speaks them: the four messages, their parsers, the key
// derivation behind a stored credential, and both conversations as pure
// state machines (internal/auth/sasl's Server and Client).
//
// Kafka's choices are kept: only the gs2 header "n" (no channel binding),
// an optional authorization id that must equal the user name, extensions
// after the nonce (Kafka's tokenauth, for delegation tokens, which weir
// does not issue: a client asking for it fails), at least 4096 iterations
// for a stored credential, and a server nonce of 24 random bytes appended
// to the client's. Unlike Kafka the server also checks that the client's
// channel binding (c=) repeats its gs2 header, as RFC 5802 asks.
//
// A replayed client-final message cannot succeed: its nonce and proof are
// bound to the server nonce of the conversation it was made for, and every
// conversation draws a new one.
//
// # What it does not own
//
// Storing credentials (the metadata log's user SCRAM credentials, served
// to the edge through a lookup) and choosing the mechanism.
//
// # Concurrency
//
// Conversations are single-connection state machines; Mechanism values
// and credential derivation are safe anywhere.
package scram
