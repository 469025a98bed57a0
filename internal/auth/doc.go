// Package auth is authentication at weir's connection edge: what a
// listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
// asks of a connection before its requests reach the broker, and the
// principal ("User:alice") each connection gets, which the authorizer
// then checks.
//
// # What it owns
//
//   - The JAAS configuration syntax of sasl.jaas.config (ParseJAAS).
//   - ssl.principal.mapping.rules (ParsePrincipalRules) and the RFC 2253
//     form of a client certificate's subject they apply to
//     (CertificateDN), as Java's X500Principal prints it.
//
// The mechanisms live in sub-packages: sasl (the contract, and PLAIN),
// scram (SCRAM-SHA-256/512).
//
// # What it does not own
//
// Framing and the connection's goroutines (internal/server), authorization
// and the storage of SCRAM credentials (the metadata log, read through a
// lookup the caller passes in).
package auth
