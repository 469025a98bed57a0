package scram

import (
	"strings"
	"testing"
)

// FuzzServer feeds arbitrary client messages to a server whose user's
// password the fuzzer does not know: it must never panic and never
// succeed.
func FuzzServer(f *testing.F) {
	f.Add("n,,n=alice,r=abc", "c=biws,r=abcxyz,p=AAAA")
	f.Add("n,a=alice,n=alice,r=abc,ext=1", "c=biws,r=abcxyz,ext=v,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add("n,,n=a=2Cb=3Dc,r=!~", "c=,r=,p=")
	f.Add("", "")
	cred, err := SHA256.NewCredential("a password no fuzzer guesses", []byte("salt"), 4096)
	if err != nil {
		f.Fatal(err)
	}
	lookup := func(string) (Credential, bool) { return cred, true }
	f.Fuzz(func(t *testing.T, first, final string) {
		s := &server{m: SHA256, lookup: lookup, nonce: fixed("xyz")}
		if _, done, err := s.Step([]byte(first)); err != nil || done {
			return
		}
		if _, done, err := s.Step([]byte(final)); err == nil || done {
			t.Fatalf("fuzzed exchange succeeded: %q %q", first, final)
		}
	})
}

// FuzzParsers checks that no parser panics and that what parses is read
// back the same after re-encoding.
func FuzzParsers(f *testing.F) {
	f.Add("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
	f.Add("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
	f.Add("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	f.Add("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
	f.Add("e=invalid-proof")
	f.Fuzz(func(t *testing.T, msg string) {
		if m, err := parseClientFirst(msg); err == nil {
			again, err := parseClientFirst(m.gs2 + "n=" + encodeSaslName(m.user) + "," + strings.SplitN(m.bare, ",", 2)[1])
			if err != nil || again.user != m.user || again.nonce != m.nonce {
				t.Fatalf("client-first %q: re-encoded as %+v, %v", msg, again, err)
			}
		}
		if m, err := parseServerFirst(msg); err == nil {
			again, err := parseServerFirst(m.String())
			if err != nil || again.nonce != m.nonce || string(again.salt) != string(m.salt) || again.iterations != m.iterations {
				t.Fatalf("server-first %q: re-encoded as %+v, %v", msg, again, err)
			}
		}
		if m, err := parseClientFinal(msg); err == nil && !strings.HasPrefix(msg, m.withoutProof) {
			t.Fatalf("client-final %q: without proof %q", msg, m.withoutProof)
		}
		if m, err := parseServerFinal(msg); err == nil && (m.err == "") == (m.signature == nil) {
			t.Fatalf("server-final %q: %+v", msg, m)
		}
	})
}
