package scram

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"weir/internal/auth/sasl"
)

func fixed(s string) func() (string, error) { return func() (string, error) { return s, nil } }

// The SCRAM-SHA-256 example of RFC 7677, section 3, both sides.
func TestRFC7677Example(t *testing.T) {
	const (
		clientFirstMsg = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
		serverFirstMsg = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
		clientFinalMsg = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
		serverFinalMsg = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
	)
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred, err := SHA256.NewCredential("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}

	c := &client{m: SHA256, user: "user", password: "pencil", newNonce: fixed("rOprNGfwEbeRWgbNEkqO")}
	s := &server{m: SHA256, lookup: func(u string) (Credential, bool) { return cred, u == "user" }, nonce: fixed("%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")}

	steps := []struct {
		side     string
		in, want string
		done     bool
	}{
		{"client", "", clientFirstMsg, false},
		{"server", clientFirstMsg, serverFirstMsg, false},
		{"client", serverFirstMsg, clientFinalMsg, false},
		{"server", clientFinalMsg, serverFinalMsg, true},
		{"client", serverFinalMsg, "", true},
	}
	for i, st := range steps {
		var out []byte
		var done bool
		var err error
		if st.side == "client" {
			var in []byte
			if st.in != "" {
				in = []byte(st.in)
			}
			out, done, err = c.Step(in)
		} else {
			out, done, err = s.Step([]byte(st.in))
		}
		if err != nil || string(out) != st.want || done != st.done {
			t.Fatalf("step %d (%s): got %q done=%v err=%v, want %q done=%v", i, st.side, out, done, err, st.want, st.done)
		}
	}
	if s.User() != "user" {
		t.Fatalf("User = %q", s.User())
	}
	if _, _, err := s.Step([]byte(clientFinalMsg)); !errors.Is(err, sasl.ErrDone) {
		t.Fatalf("step after done: %v", err)
	}
}

type store map[string]Credential

func (st store) lookup(u string) (Credential, bool) { c, ok := st[u]; return c, ok }

func newStore(t *testing.T, m Mechanism, users map[string]string, iterations int) store {
	t.Helper()
	st := store{}
	for u, p := range users {
		c, err := m.NewCredential(p, []byte("salt-of-"+u), iterations)
		if err != nil {
			t.Fatal(err)
		}
		st[u] = c
	}
	return st
}

// exchange runs a client against a server and returns the server's error,
// if any, and whether both sides finished.
func exchange(c sasl.Client, s sasl.Server) (clientErr, serverErr error, done bool) {
	var challenge []byte
	for range 4 {
		tok, cdone, err := c.Step(challenge)
		if err != nil {
			return err, nil, false
		}
		if cdone {
			return nil, nil, true
		}
		out, sdone, err := s.Step(tok)
		if err != nil {
			return nil, err, false
		}
		challenge = out
		_ = sdone
	}
	return nil, nil, false
}

func TestExchanges(t *testing.T) {
	users := map[string]string{"alice": "alice-secret", "a,b=c": "odd name", "bob": "bob-secret"}
	for _, m := range []Mechanism{SHA256, SHA512} {
		st := newStore(t, m, users, 4096)
		for _, tc := range []struct {
			name, user, password string
			wantErr              bool
		}{
			{"right password", "alice", "alice-secret", false},
			{"escaped name", "a,b=c", "odd name", false},
			{"wrong password", "alice", "bob-secret", true},
			{"unknown user", "carol", "x", true},
			{"empty password", "bob", "", true},
		} {
			t.Run(m.Name()+"/"+tc.name, func(t *testing.T) {
				s := m.NewServer(st.lookup, nil)
				cerr, serr, done := exchange(m.NewClient(tc.user, tc.password, nil), s)
				if cerr != nil {
					t.Fatalf("client error %v", cerr)
				}
				if tc.wantErr {
					if serr == nil || done || s.User() != "" {
						t.Fatalf("exchange succeeded: err=%v done=%v user=%q", serr, done, s.User())
					}
					if _, shown := errors.AsType[*sasl.Failure](serr); shown {
						t.Fatalf("failure %v is shown to the client; Kafka gives the generic message", serr)
					}
					return
				}
				if serr != nil || !done || s.User() != tc.user {
					t.Fatalf("err=%v done=%v user=%q", serr, done, s.User())
				}
			})
		}
	}
}

// A client-final message recorded from one successful exchange is refused
// by every later conversation, which draws its own server nonce.
func TestReplayedClientFinalRefused(t *testing.T) {
	st := newStore(t, SHA512, map[string]string{"alice": "pw"}, 4096)
	c := SHA512.NewClient("alice", "pw", nil)
	s := SHA512.NewServer(st.lookup, nil)
	first, _, _ := c.Step(nil)
	sf, _, err := s.Step(first)
	if err != nil {
		t.Fatal(err)
	}
	final, _, _ := c.Step(sf)
	if _, done, err := s.Step(final); err != nil || !done {
		t.Fatalf("original exchange: done=%v err=%v", done, err)
	}
	s2 := SHA512.NewServer(st.lookup, nil)
	if _, _, err := s2.Step(first); err != nil {
		t.Fatal(err)
	}
	if _, done, err := s2.Step(final); !errors.Is(err, errNonce) || done {
		t.Fatalf("replay: done=%v err=%v, want the nonce refused", done, err)
	}
	if _, _, err := s2.Step(final); !errors.Is(err, sasl.ErrDone) {
		t.Fatalf("step after failure: %v", err)
	}
}

func TestServerRefusals(t *testing.T) {
	st := newStore(t, SHA256, map[string]string{"alice": "pw"}, 4096)
	low := st["alice"]
	low.Iterations = 1024
	st["weak"] = low
	c := &client{m: SHA256, user: "alice", password: "pw", newNonce: fixed("abc")}
	first, _, _ := c.Step(nil)
	s := &server{m: SHA256, lookup: st.lookup, nonce: fixed("xyz")}
	sf, _, _ := s.Step(first)
	final, _, _ := c.Step(sf)
	good := string(final)

	for _, tc := range []struct {
		name         string
		first, final string
		want         error // nil: any error
		shown        bool
	}{
		{"authzid differs", "n,a=bob,n=alice,r=abc", "", errAuthzid, true},
		{"authzid equal", "n,a=alice,n=alice,r=abc", strings.Replace(good, "c=biws", "c="+base64.StdEncoding.EncodeToString([]byte("n,a=alice,")), 1), errProof, false},
		{"token auth", "n,,n=alice,r=abc,tokenauth=true", "", errTokenAuth, false},
		{"too few iterations", "n,,n=weak,r=abc", "", nil, false},
		{"channel binding y", "y,,n=alice,r=abc", "", ErrFormat, false},
		{"reserved m", "n,,m=x,n=alice,r=abc", "", ErrFormat, false},
		{"bad escape", "n,,n=al=2Xice,r=abc", "", ErrFormat, false},
		{"no nonce", "n,,n=alice", "", ErrFormat, false},
		{"other nonce", "n,,n=alice,r=abc", strings.Replace(good, "r=abcxyz", "r=abcxyw", 1), errNonce, false},
		{"binding not gs2", "n,,n=alice,r=abc", strings.Replace(good, "c=biws", "c=eSws", 1), errBinding, false},
		{"proof flipped", "n,,n=alice,r=abc", good[:len(good)-5] + "AAAA=", errProof, false},
		{"proof short", "n,,n=alice,r=abc", "c=biws,r=abcxyz,p=AAAA", errProof, false},
		{"final garbage", "n,,n=alice,r=abc", "garbage", ErrFormat, false},
		{"right", "n,,n=alice,r=abc", good, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &server{m: SHA256, lookup: st.lookup, nonce: fixed("xyz")}
			_, _, err := s.Step([]byte(tc.first))
			if err == nil && tc.final != "" {
				_, _, err = s.Step([]byte(tc.final))
			}
			if tc.name == "right" {
				if err != nil || s.User() != "alice" {
					t.Fatalf("err=%v user=%q", err, s.User())
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if _, shown := errors.AsType[*sasl.Failure](err); shown != tc.shown {
				t.Fatalf("shown to client = %v, want %v (%v)", shown, tc.shown, err)
			}
			if s.User() != "" {
				t.Fatalf("failed exchange names user %q", s.User())
			}
		})
	}
}

func TestClientRefusesServer(t *testing.T) {
	salt := base64.StdEncoding.EncodeToString([]byte("salt"))
	for _, tc := range []struct {
		name, first, final string
		want               error
	}{
		{"nonce not extended", "r=zzz,s=" + salt + ",i=4096", "", ErrServerNonce},
		{"nonce equal", "r=abc,s=" + salt + ",i=4096", "", ErrServerNonce},
		{"low iterations", "r=abcx,s=" + salt + ",i=100", "", ErrIterations},
		{"huge iterations", "r=abcx,s=" + salt + ",i=999999999", "", ErrIterations},
		{"bad salt", "r=abcx,s=!!,i=4096", "", ErrFormat},
		{"wrong signature", "r=abcx,s=" + salt + ",i=4096", "v=" + base64.StdEncoding.EncodeToString(make([]byte, 32)), ErrServerSignature},
		{"server error", "r=abcx,s=" + salt + ",i=4096", "e=invalid-proof", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &client{m: SHA256, user: "u", password: "p", newNonce: fixed("abc")}
			c.Step(nil)
			_, _, err := c.Step([]byte(tc.first))
			if err == nil {
				_, _, err = c.Step([]byte(tc.final))
			}
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNewCredentialIterationBounds(t *testing.T) {
	for _, n := range []int{0, 4095, 16385} {
		if _, err := SHA256.NewCredential("p", []byte("s"), n); !errors.Is(err, ErrIterations) {
			t.Fatalf("%d iterations: %v", n, err)
		}
	}
	a, _ := SHA512.NewCredential("p", []byte("s"), 4096)
	b, _ := SHA512.NewCredential("p", []byte("s"), 4097)
	if bytes.Equal(a.StoredKey, b.StoredKey) || len(a.StoredKey) != 64 || len(a.ServerKey) != 64 {
		t.Fatalf("credentials: %x %x", a.StoredKey, b.StoredKey)
	}
}

func TestByName(t *testing.T) {
	for _, n := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		if m, ok := ByName(n); !ok || m.Name() != n {
			t.Fatalf("%s: %v %v", n, m.Name(), ok)
		}
	}
	if _, ok := ByName("SCRAM-SHA-1"); ok {
		t.Fatal("SCRAM-SHA-1 known")
	}
}

func TestCredentialFromSaltedPassword(t *testing.T) {
	for _, m := range []Mechanism{SHA256, SHA512} {
		want, _ := m.NewCredential("pw", []byte("salt"), 4096)
		salted, err := m.SaltedPassword("pw", []byte("salt"), 4096)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.CredentialFromSaltedPassword(salted, []byte("salt"), 4096)
		if err != nil || !bytes.Equal(got.StoredKey, want.StoredKey) || !bytes.Equal(got.ServerKey, want.ServerKey) {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if _, err := m.CredentialFromSaltedPassword(salted[1:], []byte("salt"), 4096); err == nil {
			t.Fatal("a short salted password accepted")
		}
		if _, err := m.CredentialFromSaltedPassword(salted, []byte("salt"), 100); !errors.Is(err, ErrIterations) {
			t.Fatal("100 iterations accepted")
		}
	}
}
