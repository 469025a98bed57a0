package sasl

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"
)

// PlainUsers checks a PLAIN user's password: true when user exists and
// password is theirs. JAAS user_NAME="password" entries are the usual
// source.
type PlainUsers func(user, password string) bool

// StaticPlainUsers checks passwords against a fixed table in constant time
// per comparison.
func StaticPlainUsers(users map[string]string) PlainUsers {
	return func(user, password string) bool {
		want, ok := users[user]
		if !ok {
			// Compare anyway, so that a missing user costs what a
			// wrong password does.
			subtle.ConstantTimeCompare([]byte(password), []byte(password))
			return false
		}
		return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
	}
}

// plainServer is RFC 4616 as Kafka's PlainSaslServer reads it: one token
// "authzid NUL authcid NUL password", every failure told to the client.
type plainServer struct {
	users    PlainUsers
	user     string
	finished bool
}

// NewPlainServer returns the server side of a PLAIN exchange.
func NewPlainServer(users PlainUsers) Server { return &plainServer{users: users} }

func (s *plainServer) Step(token []byte) ([]byte, bool, error) {
	if s.finished {
		return nil, false, ErrDone
	}
	s.finished = true
	parts := strings.SplitN(string(token), "\x00", 4)
	if len(parts) != 3 {
		return nil, false, Failf(fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts)))
	}
	authzid, user, password := parts[0], parts[1], parts[2]
	switch {
	case user == "":
		return nil, false, Failf("Authentication failed: username not specified")
	case password == "":
		return nil, false, Failf("Authentication failed: password not specified")
	case !s.users(user, password):
		return nil, false, Failf("Authentication failed: Invalid username or password")
	case authzid != "" && authzid != user:
		return nil, false, Failf("Authentication failed: Client requested an authorization id that is different from username")
	}
	s.user = user
	return []byte{}, true, nil
}

func (s *plainServer) User() string      { return s.user }
func (s *plainServer) Expiry() time.Time { return time.Time{} }

// plainClient sends the one PLAIN token.
type plainClient struct {
	user, password string
	sent           bool
}

// NewPlainClient returns the client side of a PLAIN exchange.
func NewPlainClient(user, password string) Client {
	return &plainClient{user: user, password: password}
}

func (c *plainClient) Mechanism() string { return Plain }

func (c *plainClient) Step([]byte) ([]byte, bool, error) {
	if c.sent {
		return nil, true, nil
	}
	c.sent = true
	return []byte("\x00" + c.user + "\x00" + c.password), false, nil
}
