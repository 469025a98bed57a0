package sasl

import (
	"errors"
	"testing"
)

func TestPlainServer(t *testing.T) {
	users := StaticPlainUsers(map[string]string{"alice": "alice-secret"})
	for _, tc := range []struct {
		token, user, msg string
	}{
		{"\x00alice\x00alice-secret", "alice", ""},
		{"alice\x00alice\x00alice-secret", "alice", ""},
		{"bob\x00alice\x00alice-secret", "", "Authentication failed: Client requested an authorization id that is different from username"},
		{"\x00alice\x00wrong", "", "Authentication failed: Invalid username or password"},
		{"\x00carol\x00alice-secret", "", "Authentication failed: Invalid username or password"},
		{"\x00\x00pw", "", "Authentication failed: username not specified"},
		{"\x00alice\x00", "", "Authentication failed: password not specified"},
		{"alice-secret", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{"a\x00b\x00c\x00d", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
	} {
		s := NewPlainServer(users)
		out, done, err := s.Step([]byte(tc.token))
		if tc.msg == "" {
			if err != nil || !done || s.User() != tc.user || len(out) != 0 {
				t.Errorf("%q: out=%q done=%v err=%v user=%q", tc.token, out, done, err, s.User())
			}
			continue
		}
		if f, ok := errors.AsType[*Failure](err); !ok || f.Msg != tc.msg || done || s.User() != "" {
			t.Errorf("%q: err=%v done=%v user=%q, want failure %q", tc.token, err, done, s.User(), tc.msg)
		}
		if _, _, err := s.Step([]byte(tc.token)); !errors.Is(err, ErrDone) {
			t.Errorf("%q: second step %v", tc.token, err)
		}
	}
}

func TestPlainClientAgainstServer(t *testing.T) {
	c := NewPlainClient("alice", "pw")
	tok, done, err := c.Step(nil)
	if err != nil || done {
		t.Fatal(done, err)
	}
	s := NewPlainServer(StaticPlainUsers(map[string]string{"alice": "pw"}))
	ch, sdone, err := s.Step(tok)
	if err != nil || !sdone {
		t.Fatal(err)
	}
	if _, done, err := c.Step(ch); !done || err != nil {
		t.Fatalf("client after the server's answer: done=%v err=%v", done, err)
	}
}

func TestClientMessage(t *testing.T) {
	if got := ClientMessage(Failf("shown"), "PLAIN", false); got != "shown" {
		t.Fatal(got)
	}
	want := "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	if got := ClientMessage(errors.New("secret detail"), "SCRAM-SHA-256", true); got != want {
		t.Fatal(got)
	}
}
