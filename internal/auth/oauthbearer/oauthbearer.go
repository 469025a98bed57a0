package oauthbearer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"weir/internal/auth/sasl"
)

// Token is a validated token.
type Token struct {
	Principal string
	Expiry    time.Time
	IssuedAt  time.Time // zero when the token has no iat
	Scope     []string
}

// Validator checks a compact-serialised JWT.
type Validator interface {
	Validate(token string, now time.Time) (Token, error)
}

// kvsep separates the key=value pairs of the initial response.
const kvsep = "\x01"

// maxTokenBytes bounds a token; real ones are a few kilobytes.
const maxTokenBytes = 64 << 10

// initialResponse is the client's first message:
// "n,[a=authzid]," ^A "auth=Bearer <token>" ^A [key=value ^A]* ^A.
type initialResponse struct {
	authzid    string
	token      string
	extensions map[string]string
}

var errFormat = errors.New("oauthbearer: malformed client initial response")

func parseInitialResponse(msg string) (initialResponse, error) {
	var r initialResponse
	if len(msg) > maxTokenBytes {
		return r, errFormat
	}
	rest, ok := strings.CutPrefix(msg, "n,")
	if !ok {
		return r, errFormat
	}
	az, rest, ok := strings.Cut(rest, ",")
	if !ok {
		return r, errFormat
	}
	if az != "" {
		if r.authzid, ok = strings.CutPrefix(az, "a="); !ok || r.authzid == "" {
			return r, errFormat
		}
	}
	rest, ok = strings.CutPrefix(rest, kvsep)
	if !ok {
		return r, errFormat
	}
	body, ok := strings.CutSuffix(rest, kvsep+kvsep)
	if !ok {
		return r, errFormat
	}
	r.extensions = map[string]string{}
	for _, kv := range strings.Split(body, kvsep) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return r, errFormat
		}
		if k == "auth" {
			tok, ok := strings.CutPrefix(v, "Bearer ")
			if !ok || tok == "" || !tokenChars(tok) || r.token != "" {
				return r, errFormat
			}
			r.token = tok
			continue
		}
		if !alpha(k) {
			return r, errFormat
		}
		r.extensions[k] = v
	}
	if r.token == "" {
		return r, errFormat
	}
	return r, nil
}

// tokenChars: base64url and the dots between the parts.
func tokenChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '=') {
			return false
		}
	}
	return true
}

func alpha(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// server is the server side: one initial response, answered with success
// or with a JSON error challenge that the client acknowledges with ^A
// before the exchange fails.
type server struct {
	v   Validator
	now func() time.Time

	errMsg   string // the error challenge sent, awaiting ^A
	finished bool
	token    Token
}

// NewServer returns the server side of an exchange.
func NewServer(v Validator, now func() time.Time) sasl.Server {
	if now == nil {
		now = time.Now
	}
	return &server{v: v, now: now}
}

func (s *server) Step(msg []byte) ([]byte, bool, error) {
	if s.finished {
		return nil, false, sasl.ErrDone
	}
	if s.errMsg != "" {
		s.finished = true
		return nil, false, sasl.Failf(s.errMsg)
	}
	r, err := parseInitialResponse(string(msg))
	if err != nil {
		s.finished = true
		return nil, false, sasl.Failf("Authentication failed: invalid OAUTHBEARER initial response")
	}
	tok, err := s.v.Validate(r.token, s.now())
	if err != nil {
		ch, _ := json.Marshal(map[string]string{"status": "invalid_token"})
		s.errMsg = string(ch)
		return ch, false, nil
	}
	s.finished = true
	if r.authzid != "" && r.authzid != tok.Principal {
		return nil, false, sasl.Failf(fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", r.authzid, tok.Principal))
	}
	s.token = tok
	return []byte{}, true, nil
}

func (s *server) User() string      { return s.token.Principal }
func (s *server) Expiry() time.Time { return s.token.Expiry }

// client sends a token, and ^A after an error challenge.
type client struct {
	token func() (string, error)
	state int
}

// NewClient returns the client side of an exchange; token is called once
// per exchange for the token to present.
func NewClient(token func() (string, error)) sasl.Client { return &client{token: token} }

func (c *client) Mechanism() string { return sasl.OAuthBearer }

func (c *client) Step(challenge []byte) ([]byte, bool, error) {
	switch c.state {
	case 0:
		tok, err := c.token()
		if err != nil {
			return nil, false, err
		}
		c.state = 1
		return []byte("n,," + kvsep + "auth=Bearer " + tok + kvsep + kvsep), false, nil
	case 1:
		if len(challenge) > 0 {
			c.state = 2
			return []byte(kvsep), false, nil
		}
		c.state = 3
		return nil, true, nil
	case 2:
		return nil, false, errors.New("oauthbearer: server refused the token")
	}
	return nil, false, sasl.ErrDone
}
