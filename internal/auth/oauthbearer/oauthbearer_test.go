package oauthbearer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weir/internal/auth/sasl"
)

var now = time.Unix(1_700_000_000, 0)

func unsigned(claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": "none"})
	c, _ := json.Marshal(claims)
	return b64.EncodeToString(h) + "." + b64.EncodeToString(c) + "."
}

func TestUnsecured(t *testing.T) {
	exp := float64(now.Add(time.Hour).Unix())
	for _, tc := range []struct {
		name  string
		token string
		v     Unsecured
		err   string
		scope []string
	}{
		{"valid", UnsecuredToken("alice", time.Hour, now), Unsecured{}, "", nil},
		{"scope string", unsigned(map[string]any{"sub": "alice", "exp": exp, "scope": "read write"}), Unsecured{RequiredScope: []string{"write"}}, "", []string{"read", "write"}},
		{"scope list, custom claims", unsigned(map[string]any{"user": "alice", "exp": exp, "perm": []string{"a"}}), Unsecured{PrincipalClaim: "user", ScopeClaim: "perm"}, "", []string{"a"}},
		{"missing scope", unsigned(map[string]any{"sub": "alice", "exp": exp, "scope": "read"}), Unsecured{RequiredScope: []string{"write"}}, "required scope write", nil},
		{"expired", UnsecuredToken("alice", -time.Minute, now), Unsecured{}, "expired", nil},
		{"expired within skew", unsigned(map[string]any{"sub": "alice", "exp": float64(now.Add(-time.Minute).Unix())}), Unsecured{Skew: 2 * time.Minute}, "", nil},
		{"no exp", unsigned(map[string]any{"sub": "alice"}), Unsecured{}, "no exp claim", nil},
		{"exp not a number", unsigned(map[string]any{"sub": "alice", "exp": "soon"}), Unsecured{}, "not a number", nil},
		{"iat after exp", unsigned(map[string]any{"sub": "alice", "exp": float64(now.Unix() + 10), "iat": float64(now.Unix() + 20)}), Unsecured{}, "future", nil},
		{"no sub", unsigned(map[string]any{"exp": exp}), Unsecured{}, "no sub claim", nil},
		{"blank sub", unsigned(map[string]any{"sub": " ", "exp": exp}), Unsecured{}, "no sub claim", nil},
		{"signed", strings.TrimSuffix(unsigned(map[string]any{"sub": "a", "exp": exp}), ".") + ".c2ln", Unsecured{}, "no signature", nil},
		{"alg", b64.EncodeToString([]byte(`{"alg":"HS256"}`)) + "." + b64.EncodeToString([]byte(`{"sub":"a"}`)) + ".", Unsecured{}, "alg none", nil},
		{"two parts", "a.b", Unsecured{}, "3 parts", nil},
		{"not JSON", "eA.eA.", Unsecured{}, "header", nil},
	} {
		tok, err := tc.v.Validate(tc.token, now)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || tok.Principal != "alice" || tok.Expiry.IsZero() {
			t.Errorf("%s: %+v %v", tc.name, tok, err)
		}
		if tc.scope != nil && strings.Join(tok.Scope, ",") != strings.Join(tc.scope, ",") {
			t.Errorf("%s: scope %v", tc.name, tok.Scope)
		}
	}
	// Issued an hour from now: refused.
	if _, err := (Unsecured{}).Validate(unsigned(map[string]any{"sub": "a", "exp": float64(now.Add(2 * time.Hour).Unix()), "iat": float64(now.Add(time.Hour).Unix())}), now); err == nil {
		t.Error("a token issued an hour from now was accepted")
	}
}

func TestServerConversation(t *testing.T) {
	clock := func() time.Time { return now }
	s := NewServer(Unsecured{}, clock)
	c := NewClient(func() (string, error) { return UnsecuredToken("alice", time.Minute, now), nil })
	tok, _, _ := c.Step(nil)
	out, done, err := s.Step(tok)
	if err != nil || !done || len(out) != 0 || s.User() != "alice" || !s.Expiry().Equal(now.Add(time.Minute)) {
		t.Fatalf("out=%q done=%v err=%v user=%q expiry=%v", out, done, err, s.User(), s.Expiry())
	}
	if _, done, err := c.Step(out); !done || err != nil {
		t.Fatalf("client: %v %v", done, err)
	}

	// A bad token: the JSON error challenge, the client's ^A, then the
	// failure carrying that JSON, as Kafka's server does.
	s = NewServer(Unsecured{}, clock)
	c = NewClient(func() (string, error) { return UnsecuredToken("alice", -time.Hour, now), nil })
	tok, _, _ = c.Step(nil)
	ch, done, err := s.Step(tok)
	if err != nil || done || string(ch) != `{"status":"invalid_token"}` {
		t.Fatalf("challenge %q done=%v err=%v", ch, done, err)
	}
	ack, _, err := c.Step(ch)
	if err != nil || string(ack) != kvsep {
		t.Fatalf("client ack %q %v", ack, err)
	}
	_, _, err = s.Step(ack)
	if f, ok := errors.AsType[*sasl.Failure](err); !ok || f.Msg != `{"status":"invalid_token"}` || s.User() != "" {
		t.Fatalf("err %v", err)
	}
	if _, _, err := s.Step(ack); !errors.Is(err, sasl.ErrDone) {
		t.Fatalf("after failure: %v", err)
	}

	for _, tc := range []struct{ name, msg, want string }{
		{"authzid differs", "n,a=bob," + kvsep + "auth=Bearer " + UnsecuredToken("alice", time.Hour, now) + kvsep + kvsep, "different from the token's principal name"},
		{"no auth", "n,," + kvsep + "x=y" + kvsep + kvsep, "invalid OAUTHBEARER initial response"},
		{"not gs2", "y,," + kvsep + "auth=Bearer a.b." + kvsep + kvsep, "invalid OAUTHBEARER initial response"},
		{"no terminator", "n,," + kvsep + "auth=Bearer a.b." + kvsep, "invalid OAUTHBEARER initial response"},
	} {
		s := NewServer(Unsecured{}, clock)
		if _, _, err := s.Step([]byte(tc.msg)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	s = NewServer(Unsecured{}, clock)
	ext := "n,a=alice," + kvsep + "auth=Bearer " + UnsecuredToken("alice", time.Hour, now) + kvsep + "traceId=42" + kvsep + kvsep
	if _, done, err := s.Step([]byte(ext)); err != nil || !done {
		t.Fatalf("authzid equal, extension: %v %v", done, err)
	}
}

// signer makes tokens signed with a key of the JWK set it writes.
type signer struct {
	rsaKey *rsa.PrivateKey
	ecKey  *ecdsa.PrivateKey
	jwks   string
}

func newSigner(t *testing.T) *signer {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pad := func(b []byte) string { return b64.EncodeToString(append(make([]byte, 32-len(b)), b...)) }
	set := map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "r1", "alg": "RS256", "use": "sig", "n": b64.EncodeToString(rk.N.Bytes()), "e": b64.EncodeToString(big.NewInt(int64(rk.E)).Bytes())},
		{"kty": "EC", "kid": "e1", "crv": "P-256", "x": pad(ek.X.Bytes()), "y": pad(ek.Y.Bytes())},
		{"kty": "oct", "kid": "skipped", "k": "c2VjcmV0"},
	}}
	data, _ := json.Marshal(set)
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return &signer{rsaKey: rk, ecKey: ek, jwks: path}
}

func (s *signer) token(t *testing.T, alg, kid string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": alg, "kid": kid, "typ": "JWT"})
	c, _ := json.Marshal(claims)
	signed := b64.EncodeToString(h) + "." + b64.EncodeToString(c)
	d := sha256.Sum256([]byte(signed))
	var sig []byte
	var err error
	switch alg {
	case "RS256":
		sig, err = rsa.SignPKCS1v15(rand.Reader, s.rsaKey, crypto.SHA256, d[:])
	case "PS256":
		sig, err = rsa.SignPSS(rand.Reader, s.rsaKey, crypto.SHA256, d[:], &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash})
	case "ES256":
		r, ss, e := ecdsa.Sign(rand.Reader, s.ecKey, d[:])
		err = e
		sig = append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + b64.EncodeToString(sig)
}

func TestJWKS(t *testing.T) {
	s := newSigner(t)
	v, err := LoadJWKSFile("file://" + s.jwks)
	if err != nil {
		t.Fatal(err)
	}
	v.Audience, v.Issuer = []string{"kafka"}, "https://issuer.example"
	good := map[string]any{"sub": "svc-1", "exp": float64(now.Add(time.Hour).Unix()), "iss": "https://issuer.example", "aud": []string{"other", "kafka"}}
	with := func(k string, val any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if val == nil {
			delete(m, k)
		} else {
			m[k] = val
		}
		return m
	}
	for _, tc := range []struct {
		name, token, err string
	}{
		{"RS256", s.token(t, "RS256", "r1", good), ""},
		{"ES256", s.token(t, "ES256", "e1", good), ""},
		{"ES256 without kid", s.token(t, "ES256", "", good), ""},
		{"PS256 on a key pinned to RS256", s.token(t, "PS256", "r1", good), "no key"},
		{"unknown kid", s.token(t, "RS256", "r9", good), "no key"},
		{"tampered", strings.Replace(s.token(t, "RS256", "r1", good), ".", ".e30", 1)[:0] + s.token(t, "RS256", "r1", good)[:20] + "x" + s.token(t, "RS256", "r1", good)[21:], ""},
		{"other issuer", s.token(t, "RS256", "r1", with("iss", "https://evil.example")), "issuer"},
		{"other audience", s.token(t, "RS256", "r1", with("aud", "web")), "audience"},
		{"expired", s.token(t, "ES256", "e1", with("exp", float64(now.Add(-time.Hour).Unix()))), "expired"},
		{"unsigned", unsigned(good), "unsupported JWS algorithm"},
	} {
		tok, err := v.Validate(tc.token, now)
		switch {
		case tc.name == "tampered":
			if err == nil {
				t.Errorf("tampered token accepted")
			}
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
		case err != nil || tok.Principal != "svc-1":
			t.Errorf("%s: %+v %v", tc.name, tok, err)
		}
	}
	if _, err := LoadJWKSFile("https://issuer.example/jwks"); err == nil || !strings.Contains(err.Error(), "only file: URLs") {
		t.Fatalf("remote JWKS: %v", err)
	}
	if _, err := ParseJWKS([]byte(`{"keys":[{"kty":"oct","k":"x"}]}`)); err == nil {
		t.Fatal("a set without signing keys accepted")
	}
}

func FuzzServer(f *testing.F) {
	f.Add([]byte("n,," + kvsep + "auth=Bearer " + UnsecuredToken("alice", time.Hour, now) + kvsep + kvsep))
	f.Add([]byte("n,a=x," + kvsep + "auth=Bearer a.b.c" + kvsep + "k=v" + kvsep + kvsep))
	f.Add([]byte(kvsep))
	f.Fuzz(func(t *testing.T, msg []byte) {
		s := NewServer(Unsecured{}, func() time.Time { return now })
		out, done, err := s.Step(msg)
		if done && (err != nil || s.User() == "" || s.Expiry().IsZero()) {
			t.Fatalf("done without a principal and expiry: %q", msg)
		}
		if err == nil && !done {
			if _, done, err := s.Step([]byte(kvsep)); done || err == nil {
				t.Fatalf("after challenge %q the exchange did not fail", out)
			}
		}
	})
}

func FuzzJWKSValidate(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiIsImtpZCI6InIxIn0.eyJzdWIiOiJhIn0.c2ln")
	f.Add("eyJhbGciOiJFUzI1NiJ9.e30.AAAA")
	set, err := ParseJWKS([]byte(`{"keys":[{"kty":"EC","kid":"e1","crv":"P-256","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if _, err := set.Validate(token, now); err == nil {
			t.Fatalf("a fuzzed token verified: %q", token)
		}
	})
}
