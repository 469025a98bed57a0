package config

// Security config names (listeners, TLS, SASL), Kafka's.
const (
	InterBrokerListenerName   = "inter.broker.listener.name"
	SecurityInterBrokerProto  = "security.inter.broker.protocol"
	ControllerListenerNames   = "controller.listener.names"
	SaslEnabledMechanisms     = "sasl.enabled.mechanisms"
	SaslMechanismInterBroker  = "sasl.mechanism.inter.broker.protocol"
	SaslMechanismController   = "sasl.mechanism.controller.protocol"
	SaslJaasConfig            = "sasl.jaas.config"
	SaslServerMaxReceiveSize  = "sasl.server.max.receive.size"
	ConnectionsMaxReauthMs    = "connections.max.reauth.ms"
	SaslServerCallbackHandler = "sasl.server.callback.handler.class"
	SaslOAuthJwksURL          = "sasl.oauthbearer.jwks.endpoint.url"
	SaslOAuthAudience         = "sasl.oauthbearer.expected.audience"
	SaslOAuthIssuer           = "sasl.oauthbearer.expected.issuer"
	SaslOAuthSubClaim         = "sasl.oauthbearer.sub.claim.name"
	SaslOAuthScopeClaim       = "sasl.oauthbearer.scope.claim.name"
	SaslOAuthClockSkew        = "sasl.oauthbearer.clock.skew.seconds"

	SslKeystoreType       = "ssl.keystore.type"
	SslKeystoreLocation   = "ssl.keystore.location"
	SslKeystorePassword   = "ssl.keystore.password"
	SslKeyPassword        = "ssl.key.password"
	SslKeystoreChain      = "ssl.keystore.certificate.chain"
	SslKeystoreKey        = "ssl.keystore.key"
	SslTruststoreType     = "ssl.truststore.type"
	SslTruststoreLocation = "ssl.truststore.location"
	SslTruststorePassword = "ssl.truststore.password"
	SslTruststoreCerts    = "ssl.truststore.certificates"
	SslClientAuth         = "ssl.client.auth"
	SslEnabledProtocols   = "ssl.enabled.protocols"
	SslProtocol           = "ssl.protocol"
	SslCipherSuites       = "ssl.cipher.suites"
	SslPrincipalRules     = "ssl.principal.mapping.rules"
	SslEndpointIdentAlg   = "ssl.endpoint.identification.algorithm"
)

// Security protocols.
var securityProtocols = oneOf{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// securityDefs are the listener, TLS and SASL configs. Each can also be
// set for one listener as listener.name.<listener>.<config> (and the
// SASL ones per mechanism as listener.name.<listener>.<mechanism>.<config>),
// which Broker.ListenerValue resolves. Kafka lets the keystore and
// truststore of a listener change per broker at run time: those are
// Dynamic here, and a change reloads the listener's certificates.
var securityDefs = []Def{
	{Name: InterBrokerListenerName, Type: String, NullDefault: true, Support: Honoured, Doc: "Listener brokers use to talk to each other; security.inter.broker.protocol names it when unset."},
	{Name: SecurityInterBrokerProto, Type: String, Default: "PLAINTEXT", valid: securityProtocols, Support: Honoured, Doc: "Security protocol between brokers, when inter.broker.listener.name is unset: the listener of that name."},
	{Name: ControllerListenerNames, Type: List, NullDefault: true, valid: listOf{anyStrings: true, nullOK: true}, Support: Honoured, Doc: "Listener the metadata controller's clients use; weir's controller answers on the broker's listeners, so the first name must be one of listeners. Default: the inter-broker listener."},
	{Name: SaslEnabledMechanisms, Type: List, Default: "GSSAPI", valid: listOf{anyStrings: true, emptyOK: true}, Support: Honoured, Doc: "SASL mechanisms SASL listeners accept: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (GSSAPI is refused)."},
	{Name: SaslMechanismInterBroker, Type: String, Default: "GSSAPI", Support: Honoured, Doc: "SASL mechanism brokers authenticate to each other with."},
	{Name: SaslMechanismController, Type: String, Default: "GSSAPI", Support: Honoured, Doc: "SASL mechanism controller clients authenticate with."},
	{Name: SaslJaasConfig, Type: Password, NullDefault: true, Support: Honoured, Doc: "JAAS login module: user_NAME=\"password\" entries are PLAIN users; username/password the broker's own inter-broker credentials."},
	{Name: SaslServerMaxReceiveSize, Type: Int, Default: "524288", valid: atLeast(1), Support: Honoured, Doc: "Largest request accepted before a connection has authenticated."},
	{Name: ConnectionsMaxReauthMs, Type: Long, Default: "0", valid: atLeast(0), Support: Honoured, Doc: "KIP-368: a SASL session's lifetime; a connection not re-authenticated by then is closed at its next request. 0: no limit."},
	{Name: SaslServerCallbackHandler, Type: Class, NullDefault: true, Support: Honoured, Doc: "For OAUTHBEARER: org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler validates JWTs against sasl.oauthbearer.jwks.endpoint.url; unset, tokens are checked by Kafka's unsecured validator."},
	{Name: SaslOAuthJwksURL, Type: String, NullDefault: true, Support: Honoured, Doc: "JWKS of the token issuer; weir reads file: URLs only (no network fetch)."},
	{Name: SaslOAuthAudience, Type: List, NullDefault: true, valid: listOf{anyStrings: true, nullOK: true}, Support: Honoured, Doc: "Audiences a token must name one of."},
	{Name: SaslOAuthIssuer, Type: String, NullDefault: true, Support: Honoured, Doc: "Issuer a token must name."},
	{Name: SaslOAuthSubClaim, Type: String, Default: "sub", Support: Honoured, Doc: "Claim holding the principal name."},
	{Name: SaslOAuthScopeClaim, Type: String, Default: "scope", Support: Honoured, Doc: "Claim holding the token's scopes."},
	{Name: SaslOAuthClockSkew, Type: Int, Default: "30", valid: atLeast(0), Support: Honoured, Doc: "Clock skew allowed when checking a token's times."},

	{Name: SslKeystoreType, Type: String, Default: "JKS", valid: oneOf{"JKS", "PKCS12", "PEM"}, Dynamic: true, Support: Honoured, Doc: "PKCS12 or PEM; a JKS-typed file is read when it is really PKCS12 (as Java's keystore.type.compat does), a true JKS file is refused."},
	{Name: SslKeystoreLocation, Type: String, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Keystore file: PKCS12, or PEM with the private key and the certificate chain."},
	{Name: SslKeystorePassword, Type: Password, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Password of the keystore file."},
	{Name: SslKeyPassword, Type: Password, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Password of the private key (encrypted PEM keys, or a PKCS12 key protected apart from its store)."},
	{Name: SslKeystoreChain, Type: Password, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "PEM certificate chain, with ssl.keystore.type=PEM."},
	{Name: SslKeystoreKey, Type: Password, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "PEM private key, with ssl.keystore.type=PEM."},
	{Name: SslTruststoreType, Type: String, Default: "JKS", valid: oneOf{"JKS", "PKCS12", "PEM"}, Dynamic: true, Support: Honoured, Doc: "PKCS12 or PEM; see ssl.keystore.type."},
	{Name: SslTruststoreLocation, Type: String, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Truststore file: the CAs client certificates must chain to."},
	{Name: SslTruststorePassword, Type: Password, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Password of the truststore file."},
	{Name: SslTruststoreCerts, Type: Password, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "PEM trusted certificates, with ssl.truststore.type=PEM."},
	{Name: SslClientAuth, Type: String, Default: "none", valid: oneOf{"required", "requested", "none"}, Support: Honoured, Doc: "Whether SSL listeners ask clients for a certificate."},
	{Name: SslEnabledProtocols, Type: List, Default: "TLSv1.2,TLSv1.3", valid: listOf{anyStrings: true}, Support: Honoured, Doc: "TLS versions accepted: a contiguous range of TLSv1.2 and TLSv1.3 (TLSv1 and TLSv1.1 also parse)."},
	{Name: SslProtocol, Type: String, Default: "TLSv1.3", Support: Stored, Doc: "SSLContext protocol; weir negotiates from ssl.enabled.protocols."},
	{Name: SslCipherSuites, Type: List, Default: "", valid: listOf{anyStrings: true, emptyOK: true}, Support: Honoured, Doc: "TLS 1.2 cipher suites by their IANA names; empty: Go's defaults. TLS 1.3 suites are listed but not selectable."},
	{Name: SslPrincipalRules, Type: String, Default: "DEFAULT", Support: Honoured, Doc: "Rules mapping a client certificate's distinguished name to a user name."},
	{Name: SslEndpointIdentAlg, Type: String, Default: "https", Support: Honoured, Doc: "https checks the broker's host name against its certificate on inter-broker connections; empty turns it off."},
}
