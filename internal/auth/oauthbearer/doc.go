// Package oauthbearer is SASL/OAUTHBEARER (RFC 7628) as Kafka speaks it:
// the client's initial response, the server conversation with its JSON
// error challenge, and the two token validators Kafka ships:
//
//   - Unsecured: Kafka's OAuthBearerUnsecuredValidatorCallbackHandler,
//     for tests and development. The token is an unsigned JWS
//     ("alg":"none", empty signature) whose claims are trusted once their
//     times and scopes check out.
//   - JWKS: Kafka's OAuthBearerValidatorCallbackHandler for real
//     issuers, which checks the token's RS256/RS384/RS512, PS256/384/512
//     or ES256/384/512 signature against keys of a JWK set, then its
//     expiry, issuer and audience. The key set is read from a file (a
//     file: URL, as Kafka accepts); weir never fetches one over the
//     network.
//
// The credential's expiry bounds the session the edge grants (KIP-368).
//
// # Concurrency
//
// Validators are immutable and safe for concurrent use; conversations
// are per connection.
package oauthbearer
