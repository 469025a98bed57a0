package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"

	"weir/internal/auth/sasl"
)

// Mechanism is one SCRAM hash.
type Mechanism struct {
	name string
	hash func() hash.Hash
	size int
}

var (
	SHA256 = Mechanism{name: sasl.ScramSHA256, hash: sha256.New, size: sha256.Size}
	SHA512 = Mechanism{name: sasl.ScramSHA512, hash: sha512.New, size: sha512.Size}
)

// Iteration bounds: Kafka's ScramMechanism minimum, and the most
// AlterUserScramCredentials accepts.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// ByName returns the mechanism of a SaslHandshake name.
func ByName(name string) (Mechanism, bool) {
	switch name {
	case sasl.ScramSHA256:
		return SHA256, true
	case sasl.ScramSHA512:
		return SHA512, true
	}
	return Mechanism{}, false
}

// Name is the mechanism's SASL name.
func (m Mechanism) Name() string { return m.name }

// Credential is what a server stores for a user: never the password.
type Credential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// ErrIterations is a credential outside [MinIterations, MaxIterations].
var ErrIterations = errors.New("scram: iterations out of range")

// NewCredential derives the stored credential of password, as
// kafka-configs --add-config 'SCRAM-SHA-256=[password=...]' does.
func (m Mechanism) NewCredential(password string, salt []byte, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrIterations, iterations, MinIterations, MaxIterations)
	}
	salted, err := m.saltedPassword(password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	ck := m.hmac(salted, []byte("Client Key"))
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.digest(ck),
		ServerKey:  m.hmac(salted, []byte("Server Key")),
		Iterations: iterations,
	}, nil
}

// CredentialFromSaltedPassword derives the stored credential from a
// salted password, as AlterUserScramCredentials upsertions carry it
// (SaltedPassword, Salt, Iterations): the server never sees the password.
func (m Mechanism) CredentialFromSaltedPassword(salted, salt []byte, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("%w: %d not in [%d, %d]", ErrIterations, iterations, MinIterations, MaxIterations)
	}
	if len(salted) != m.size {
		return Credential{}, fmt.Errorf("scram: a %s salted password is %d bytes, not %d", m.name, m.size, len(salted))
	}
	return Credential{
		Salt:       append([]byte(nil), salt...),
		StoredKey:  m.digest(m.hmac(salted, []byte("Client Key"))),
		ServerKey:  m.hmac(salted, []byte("Server Key")),
		Iterations: iterations,
	}, nil
}

// SaltedPassword is Hi(password, salt, iterations), what a client sends in
// an AlterUserScramCredentials upsertion.
func (m Mechanism) SaltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return m.saltedPassword(password, salt, iterations)
}

// saltedPassword is Hi(password, salt, i) of RFC 5802: PBKDF2 with the
// mechanism's HMAC. SASLprep is not applied, as Kafka does not.
func (m Mechanism) saltedPassword(password string, salt []byte, iterations int) ([]byte, error) {
	return pbkdf2.Key(m.hash, password, salt, iterations, m.size)
}

func (m Mechanism) hmac(key, msg []byte) []byte {
	h := hmac.New(m.hash, key)
	h.Write(msg)
	return h.Sum(nil)
}

func (m Mechanism) digest(b []byte) []byte {
	h := m.hash()
	h.Write(b)
	return h.Sum(nil)
}

func xor(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}
