package scram

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"time"

	"weir/internal/auth/sasl"
)

// nonceBytes is the random part each side adds to the nonce.
const nonceBytes = 24

// Lookup returns a user's stored credential for one mechanism.
type Lookup func(user string) (Credential, bool)

type serverState uint8

const (
	awaitClientFirst serverState = iota
	awaitClientFinal
	serverDone
	serverFailed
)

// server is the server side of one SCRAM exchange.
type server struct {
	m      Mechanism
	lookup Lookup
	nonce  func() (string, error)

	state serverState
	first clientFirst
	sent  serverFirst
	cred  Credential
	user  string
}

// NewServer returns the server side of an exchange; random supplies the
// server nonce (crypto/rand when nil).
func (m Mechanism) NewServer(lookup Lookup, random io.Reader) sasl.Server {
	if random == nil {
		random = rand.Reader
	}
	return &server{m: m, lookup: lookup, nonce: func() (string, error) { return randomNonce(random) }}
}

// Errors the server reports. Only errAuthzid is shown to the client; the
// others get Kafka's generic message.
var (
	errUnknownUser = errors.New("scram: Authentication failed: Invalid user credentials")
	errTokenAuth   = errors.New("scram: delegation token authentication is not supported")
	errNonce       = errors.New("scram: Invalid client nonce in the final client message")
	errBinding     = errors.New("scram: channel binding does not repeat the gs2 header")
	errProof       = errors.New("scram: Invalid client credentials")
	errAuthzid     = sasl.Failf("Authentication failed: Client requested an authorization id that is different from username")
)

func (s *server) Step(token []byte) ([]byte, bool, error) {
	switch s.state {
	case awaitClientFirst:
		out, err := s.clientFirst(string(token))
		if err != nil {
			s.fail()
			return nil, false, err
		}
		s.state = awaitClientFinal
		return out, false, nil
	case awaitClientFinal:
		out, err := s.clientFinal(string(token))
		if err != nil {
			s.fail()
			return nil, false, err
		}
		s.state = serverDone
		s.cred = Credential{}
		return out, true, nil
	}
	return nil, false, sasl.ErrDone
}

func (s *server) fail() {
	s.state = serverFailed
	s.cred = Credential{}
}

func (s *server) clientFirst(msg string) ([]byte, error) {
	first, err := parseClientFirst(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: client-first", err)
	}
	if first.extensions["tokenauth"] != "" {
		return nil, errTokenAuth
	}
	cred, ok := s.lookup(first.user)
	if !ok {
		return nil, errUnknownUser
	}
	if first.authzid != "" && first.authzid != first.user {
		return nil, errAuthzid
	}
	if cred.Iterations < MinIterations {
		return nil, fmt.Errorf("scram: Iterations %d is less than the minimum %d for %s", cred.Iterations, MinIterations, s.m.name)
	}
	nonce, err := s.nonce()
	if err != nil {
		return nil, err
	}
	s.first, s.cred, s.user = first, cred, first.user
	s.sent = serverFirst{nonce: first.nonce + nonce, salt: cred.Salt, iterations: cred.Iterations}
	return []byte(s.sent.String()), nil
}

func (s *server) clientFinal(msg string) ([]byte, error) {
	final, err := parseClientFinal(msg)
	if err != nil {
		return nil, fmt.Errorf("%w: client-final", err)
	}
	if final.nonce != s.sent.nonce {
		return nil, errNonce
	}
	if string(final.binding) != s.first.gs2 {
		return nil, errBinding
	}
	authMessage := []byte(s.first.bare + "," + s.sent.String() + "," + final.withoutProof)
	sig := s.m.hmac(s.cred.StoredKey, authMessage)
	if len(final.proof) != len(sig) {
		return nil, errProof
	}
	if !hmac.Equal(s.m.digest(xor(final.proof, sig)), s.cred.StoredKey) {
		return nil, errProof
	}
	return []byte("v=" + base64.StdEncoding.EncodeToString(s.m.hmac(s.cred.ServerKey, authMessage))), nil
}

func (s *server) User() string {
	if s.state != serverDone {
		return ""
	}
	return s.user
}

func (s *server) Expiry() time.Time { return time.Time{} }

func randomNonce(r io.Reader) (string, error) {
	b := make([]byte, nonceBytes)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", fmt.Errorf("scram: nonce: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

type clientState uint8

const (
	sendClientFirst clientState = iota
	awaitServerFirst
	awaitServerFinal
	clientDone
)

// client is the client side of one SCRAM exchange.
type client struct {
	m              Mechanism
	user, password string
	newNonce       func() (string, error)

	state     clientState
	bare      string
	nonce     string
	serverKey []byte
	auth      []byte
}

// NewClient returns the client side of an exchange for user and password;
// random supplies the client nonce (crypto/rand when nil).
func (m Mechanism) NewClient(user, password string, random io.Reader) sasl.Client {
	if random == nil {
		random = rand.Reader
	}
	return &client{m: m, user: user, password: password, newNonce: func() (string, error) { return randomNonce(random) }}
}

func (c *client) Mechanism() string { return c.m.name }

// Errors the client reports about a server.
var (
	ErrServerNonce     = errors.New("scram: server nonce does not extend the client's")
	ErrServerSignature = errors.New("scram: server signature does not verify")
)

func (c *client) Step(challenge []byte) ([]byte, bool, error) {
	switch c.state {
	case sendClientFirst:
		nonce, err := c.newNonce()
		if err != nil {
			return nil, false, err
		}
		c.nonce = nonce
		c.bare = "n=" + encodeSaslName(c.user) + ",r=" + nonce
		c.state = awaitServerFirst
		return []byte("n,," + c.bare), false, nil
	case awaitServerFirst:
		sf, err := parseServerFirst(string(challenge))
		if err != nil {
			return nil, false, fmt.Errorf("%w: server-first", err)
		}
		if len(sf.nonce) <= len(c.nonce) || sf.nonce[:len(c.nonce)] != c.nonce {
			return nil, false, ErrServerNonce
		}
		if sf.iterations < MinIterations || sf.iterations > MaxIterations {
			return nil, false, fmt.Errorf("%w: server asks for %d", ErrIterations, sf.iterations)
		}
		salted, err := c.m.saltedPassword(c.password, sf.salt, sf.iterations)
		if err != nil {
			return nil, false, err
		}
		withoutProof := "c=biws,r=" + sf.nonce // biws: base64 of the gs2 header "n,,"
		c.auth = []byte(c.bare + "," + string(challenge) + "," + withoutProof)
		clientKey := c.m.hmac(salted, []byte("Client Key"))
		proof := xor(clientKey, c.m.hmac(c.m.digest(clientKey), c.auth))
		c.serverKey = c.m.hmac(salted, []byte("Server Key"))
		c.state = awaitServerFinal
		return []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), false, nil
	case awaitServerFinal:
		sf, err := parseServerFinal(string(challenge))
		if err != nil {
			return nil, false, fmt.Errorf("%w: server-final", err)
		}
		if sf.err != "" {
			return nil, false, fmt.Errorf("scram: server refused: %s", sf.err)
		}
		if !hmac.Equal(sf.signature, c.m.hmac(c.serverKey, c.auth)) {
			return nil, false, ErrServerSignature
		}
		c.state = clientDone
		return nil, true, nil
	}
	return nil, false, sasl.ErrDone
}
