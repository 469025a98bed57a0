// Package auth is authentication at weir's connection edge: what a
// listener's security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
// asks of a connection before its requests reach the broker, and the
// principal ("User:alice", "User:ANONYMOUS") every request then carries
// in server.ConnInfo for the authorizer to check.
//
// # What it owns
//
//   - Listener: one listener's server.Security, built from the broker's
//     settings (NewListener) and reconfigured from dynamic configs
//     (Reconfigure). It runs the TLS handshake (TLSSettings: PEM or
//     PKCS12 keystores and truststores, ssl.client.auth,
//     ssl.enabled.protocols, ssl.cipher.suites), names SSL clients from
//     their certificate through ssl.principal.mapping.rules
//     (ParsePrincipalRules, CertificateDN), and on SASL listeners puts a
//     Session in front of every connection.
//   - Session: the SASL exchange of one connection as a pure state
//     machine, Kafka's SaslServerAuthenticator: ApiVersions then
//     SaslHandshake then SaslAuthenticate rounds, KIP-368 session
//     lifetimes and re-authentication, every other request before
//     authentication closing the connection. Transcripts in
//     testdata/session.
//   - The JAAS syntax of sasl.jaas.config (ParseJAAS): PLAIN's user_NAME
//     entries, the broker's own username/password for inter-broker
//     connections, OAUTHBEARER's unsecured validator options.
//   - ClientSecurity: the client side for weir's client, tools and
//     inter-broker connections (InterBrokerClient), from the Java
//     client's property names: Dial returns a connection that has done
//     its TLS handshake and SASL exchange.
//
// The mechanisms live in sub-packages: sasl (the contract between a
// Session and a mechanism, and PLAIN), scram (SCRAM-SHA-256/512),
// oauthbearer (OAUTHBEARER with Kafka's unsecured validator and a JWKS
// file validator). authtest makes certificates for tests.
//
// # What it does not own
//
// Framing and the connection's goroutines (internal/server), authorization
// (the authorizer reads ConnInfo.Principal), and the storage of SCRAM
// credentials: the metadata log's, reached through Deps.ScramCredential.
//
// # Concurrency
//
// A Listener is shared by all its connections: its TLS configuration,
// principal rules and SASL setup are immutable values behind atomic
// pointers, swapped whole by Reconfigure (one caller at a time: the
// broker's config loop) while connections load them. A Session and the
// gate around it belong to one connection's reader goroutine. Nothing in
// the package takes a lock.
package auth
