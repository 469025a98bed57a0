package sasl

import (
	"errors"
	"time"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain        = "PLAIN"
	ScramSHA256  = "SCRAM-SHA-256"
	ScramSHA512  = "SCRAM-SHA-512"
	OAuthBearer  = "OAUTHBEARER"
	GSSAPI       = "GSSAPI"
	maxTokenSize = 512 << 10
)

// MaxTokenSize is Kafka's sasl.server.max.receive.size default: the largest
// request a connection may send before it has authenticated.
const MaxTokenSize = maxTokenSize

// Server is the server side of one SASL exchange.
type Server interface {
	// Step consumes one client token and returns the challenge to send
	// back (possibly empty). done reports that the exchange succeeded and
	// no more tokens are expected; a non-nil error ends it failed. A
	// Server that is done or failed refuses further tokens.
	Step(token []byte) (challenge []byte, done bool, err error)
	// User is the authenticated user name once Step reported done.
	User() string
	// Expiry is when the credential the client presented stops being
	// valid (an OAUTHBEARER token's exp), or the zero time when it does
	// not expire. Meaningful once done.
	Expiry() time.Time
}

// Client is the client side of one SASL exchange.
type Client interface {
	// Mechanism is the name sent in SaslHandshake.
	Mechanism() string
	// Step returns the next token to send, given the server's last
	// challenge (nil before the first token). done reports that the
	// server's last challenge completed the exchange from the client's
	// point of view: nothing more is to be sent.
	Step(challenge []byte) (token []byte, done bool, err error)
}

// Failure is an authentication failure whose message the client may see.
// Other errors reaching the edge are reported with a generic message.
type Failure struct {
	Msg string
}

func (f *Failure) Error() string { return f.Msg }

// Failf returns a *Failure.
func Failf(msg string) error { return &Failure{Msg: msg} }

// ErrDone is returned by a conversation stepped after it finished.
var ErrDone = errors.New("sasl: exchange already finished")

// ClientMessage is what the edge tells a client whose authentication
// failed: a *Failure's own message, else Kafka's generic text, which
// names only the mechanism.
func ClientMessage(err error, mechanism string, reauth bool) string {
	if f, ok := errors.AsType[*Failure](err); ok {
		return f.Msg
	}
	what := "authentication"
	if reauth {
		what = "re-authentication"
	}
	return "Authentication failed during " + what + " due to invalid credentials with SASL mechanism " + mechanism
}
