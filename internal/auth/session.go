package auth

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/sasl"
)

// API keys the SASL exchange uses.
const (
	keyApiVersions      = 18
	keySaslHandshake    = 17
	keySaslAuthenticate = 36
)

// minReauthInterval is Kafka's floor between two re-authentications of one
// connection; a SaslHandshake sooner is answered ILLEGAL_SASL_STATE.
const minReauthInterval = time.Second

// SessionConfig is what one SASL connection needs.
type SessionConfig struct {
	// Mechanisms are the listener's sasl.enabled.mechanisms, in order.
	Mechanisms []string
	// NewServer starts a server conversation for one of Mechanisms.
	NewServer func(mechanism string) (sasl.Server, error)
	// MaxReauth is connections.max.reauth.ms for a mechanism; 0 means no
	// limit (a session then ends only when its credential expires).
	MaxReauth func(mechanism string) time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

type sessionState uint8

const (
	stateInitial      sessionState = iota // ApiVersions or SaslHandshake
	stateHandshake                        // after ApiVersions: SaslHandshake only
	stateAuthenticate                     // SaslAuthenticate tokens until done
	stateComplete                         // authenticated: requests go to the broker
	stateFailed                           // closed
)

// Session is one SASL connection's authentication as a pure state
// machine, Kafka's SaslServerAuthenticator with KIP-368 re-authentication:
//
//	initial ──ApiVersions──> handshake ──SaslHandshake──> authenticate
//	   └────────────SaslHandshake──────────────────────────┘   │
//	                                          SaslAuthenticate* │ done
//	complete <──────────────────────────────────────────────────┘
//	   └─SaslHandshake (before expiry, same mechanism)─> authenticate (re-authentication)
//
// Before authentication only ApiVersions (once, first), SaslHandshake and
// then SaslAuthenticate are admitted; anything else closes the
// connection, as does every failure once its answer is written. After the
// session lifetime the answer to any request is to close.
type Session struct {
	cfg SessionConfig

	state      sessionState
	mechanism  string
	conv       sasl.Server
	principal  string
	reauth     bool      // the exchange in progress re-authenticates
	expiry     time.Time // zero: the session does not expire
	lastReauth time.Time
}

// NewSession starts a connection's authentication.
func NewSession(cfg SessionConfig) *Session {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxReauth == nil {
		cfg.MaxReauth = func(string) time.Duration { return 0 }
	}
	return &Session{cfg: cfg}
}

// Outcome is what becomes of one request.
type Outcome struct {
	// Response answers the request in the broker's stead.
	Response kmsg.Response
	// Close closes the connection, after Response if there is one.
	Close bool
	// Principal is set once authentication completes.
	Principal string
	// Reason says why the connection closes, for the log.
	Reason string
}

// Pass reports whether the request goes on to the broker.
func (o Outcome) Pass() bool { return o.Response == nil && !o.Close }

// Authenticated reports whether requests go to the broker now.
func (s *Session) Authenticated() bool { return s.state == stateComplete }

// Principal is the authenticated principal, "" before.
func (s *Session) Principal() string { return s.principal }

// Admit reports whether a request of this key may be read at all. It is
// asked before the body is decoded, as Kafka refuses unexpected requests
// before parsing them.
func (s *Session) Admit(key int16) bool {
	switch s.state {
	case stateInitial:
		return key == keyApiVersions || key == keySaslHandshake
	case stateHandshake:
		return key == keySaslHandshake
	case stateAuthenticate:
		return key == keySaslAuthenticate
	case stateComplete:
		return true
	}
	return false
}

// Handle decides one admitted request.
func (s *Session) Handle(key int16, body kmsg.Request) Outcome {
	if !s.Admit(key) {
		return s.fail(fmt.Sprintf("unexpected %s request in SASL state %s", kmsg.NameForKey(key), s.state))
	}
	switch s.state {
	case stateInitial:
		if key == keyApiVersions {
			s.state = stateHandshake
			return Outcome{}
		}
		return s.handshake(body.(*kmsg.SASLHandshakeRequest))
	case stateHandshake:
		return s.handshake(body.(*kmsg.SASLHandshakeRequest))
	case stateAuthenticate:
		return s.authenticate(body.(*kmsg.SASLAuthenticateRequest))
	}
	return s.complete(key, body)
}

// complete serves an authenticated connection.
func (s *Session) complete(key int16, body kmsg.Request) Outcome {
	now := s.cfg.Now()
	if !s.expiry.IsZero() && now.After(s.expiry) {
		return s.fail("session expired without re-authentication")
	}
	switch key {
	case keySaslHandshake:
		// Kafka re-authenticates only sessions that expire, at most once
		// a second; otherwise the handshake is an ordinary request that
		// its handler refuses.
		if s.expiry.IsZero() || (!s.lastReauth.IsZero() && now.Sub(s.lastReauth) < minReauthInterval) {
			resp := kmsg.NewPtrSASLHandshakeResponse()
			resp.ErrorCode = kerr.IllegalSaslState.Code
			return Outcome{Response: resp}
		}
		s.lastReauth = now
		s.reauth = true
		return s.handshake(body.(*kmsg.SASLHandshakeRequest))
	case keySaslAuthenticate:
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return Outcome{Response: resp}
	}
	return Outcome{}
}

func (s *Session) handshake(req *kmsg.SASLHandshakeRequest) Outcome {
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SupportedMechanisms = slices.Clone(s.cfg.Mechanisms)
	if !slices.Contains(s.cfg.Mechanisms, req.Mechanism) {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		o := s.fail("unsupported SASL mechanism " + req.Mechanism)
		o.Response = resp
		return o
	}
	if s.reauth && req.Mechanism != s.mechanism {
		// Kafka answers the handshake and refuses the token that follows.
		s.state = stateFailed
		return Outcome{Response: resp}
	}
	conv, err := s.cfg.NewServer(req.Mechanism)
	if err != nil {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		o := s.fail(fmt.Sprintf("SASL mechanism %s: %v", req.Mechanism, err))
		o.Response = resp
		return o
	}
	s.mechanism, s.conv, s.state = req.Mechanism, conv, stateAuthenticate
	return Outcome{Response: resp}
}

func (s *Session) authenticate(req *kmsg.SASLAuthenticateRequest) Outcome {
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	challenge, done, err := s.conv.Step(req.SASLAuthBytes)
	if err == nil && done && s.reauth && UserPrincipal(s.conv.User()) != s.principal {
		err = sasl.Failf(fmt.Sprintf("Cannot change principals during re-authentication from %s: %s",
			dotted(s.principal), dotted(UserPrincipal(s.conv.User()))))
	}
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := sasl.ClientMessage(err, s.mechanism, s.reauth)
		resp.ErrorMessage = &msg
		o := s.fail(fmt.Sprintf("SASL %s authentication failed: %v", s.mechanism, err))
		o.Response = resp
		return o
	}
	resp.SASLAuthBytes = challenge
	if resp.SASLAuthBytes == nil {
		resp.SASLAuthBytes = []byte{}
	}
	if !done {
		return Outcome{Response: resp}
	}
	now := s.cfg.Now()
	lifetime := s.cfg.MaxReauth(s.mechanism)
	if exp := s.conv.Expiry(); !exp.IsZero() {
		if left := exp.Sub(now); lifetime <= 0 || left < lifetime {
			lifetime = max(left, 0)
		}
	}
	s.expiry = time.Time{}
	if lifetime > 0 || !s.conv.Expiry().IsZero() {
		s.expiry = now.Add(lifetime)
	}
	resp.SessionLifetimeMillis = lifetime.Milliseconds()
	s.principal = UserPrincipal(s.conv.User())
	s.state, s.conv, s.reauth = stateComplete, nil, false
	return Outcome{Response: resp, Principal: s.principal}
}

// dotted prints a principal as Kafka's re-authentication message does.
func dotted(p string) string {
	if len(p) > len(UserType) && p[:len(UserType)+1] == UserType+":" {
		return UserType + "." + p[len(UserType)+1:]
	}
	return p
}

func (s *Session) fail(reason string) Outcome {
	s.state, s.conv = stateFailed, nil
	return Outcome{Close: true, Reason: reason}
}

func (st sessionState) String() string {
	switch st {
	case stateInitial:
		return "initial"
	case stateHandshake:
		return "handshake"
	case stateAuthenticate:
		return "authenticate"
	case stateComplete:
		return "complete"
	}
	return "failed"
}
