package auth

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzSession feeds a SASL session arbitrary handshakes and tokens: it
// must never panic, and never authenticate a client that did not give
// one of the test users' passwords.
func FuzzSession(f *testing.F) {
	f.Add("PLAIN", []byte("\x00alice\x00wrong"), []byte("x"), uint8(0))
	f.Add("SCRAM-SHA-256", []byte("n,,n=alice,r=abc"), []byte("c=biws,r=abc,p=AAAA"), uint8(3))
	f.Add("EXPIRING", []byte("alice:-5"), []byte(""), uint8(1))
	f.Fuzz(func(t *testing.T, mech string, first, second []byte, order uint8) {
		now := time.Unix(1_700_000_000, 0)
		s := NewSession(SessionConfig{
			Mechanisms: []string{"PLAIN", "SCRAM-SHA-256", "EXPIRING"},
			NewServer:  testMechanisms(t, func() time.Time { return now }),
			MaxReauth:  func(string) time.Duration { return time.Second },
			Now:        func() time.Time { return now },
		})
		steps := []func() Outcome{
			func() Outcome {
				r := kmsg.NewPtrSASLHandshakeRequest()
				r.Mechanism = mech
				return s.Handle(r.Key(), r)
			},
			func() Outcome {
				r := kmsg.NewPtrSASLAuthenticateRequest()
				r.SASLAuthBytes = first
				return s.Handle(r.Key(), r)
			},
			func() Outcome {
				r := kmsg.NewPtrSASLAuthenticateRequest()
				r.SASLAuthBytes = second
				return s.Handle(r.Key(), r)
			},
			func() Outcome { return s.Handle(keyApiVersions, kmsg.NewPtrApiVersionsRequest()) },
		}
		for i := range 4 {
			o := steps[(int(order)>>(2*i))&3]()
			if o.Principal != "" && mech != "EXPIRING" {
				t.Fatalf("authenticated %s with fuzzed tokens %q %q", o.Principal, first, second)
			}
			if o.Close {
				return
			}
		}
	})
}
