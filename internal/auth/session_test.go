package auth

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/auth/sasl"
	"weir/internal/auth/scram"
)

// creds are the test users' SCRAM credentials, derived once: 4096
// PBKDF2 rounds each would dominate the fuzz targets.
var (
	credsOnce sync.Once
	creds     = map[string]map[string]scram.Credential{}
)

// seeded is a deterministic byte source, so transcripts print stable
// SCRAM nonces.
type seeded struct{ r *rand.ChaCha8 }

func (s seeded) Read(p []byte) (int, error) { return s.r.Read(p) }

func newSeeded() seeded { return seeded{rand.NewChaCha8([32]byte{1})} }

// testMechanisms builds server conversations over fixed users: PLAIN
// alice/alice-pw and bob/bob-pw, SCRAM the same with 4096 iterations, and
// OAUTHBEARER-like "EXPIRING" whose token "user:seconds" expires.
func testMechanisms(t testing.TB, now func() time.Time) func(string) (sasl.Server, error) {
	users := map[string]string{"alice": "alice-pw", "bob": "bob-pw"}
	credsOnce.Do(func() {
		for _, m := range []scram.Mechanism{scram.SHA256, scram.SHA512} {
			creds[m.Name()] = map[string]scram.Credential{}
			for u, p := range users {
				c, err := m.NewCredential(p, []byte("salt-"+u), 4096)
				if err != nil {
					panic(err)
				}
				creds[m.Name()][u] = c
			}
		}
	})
	random := newSeeded()
	return func(mech string) (sasl.Server, error) {
		switch mech {
		case sasl.Plain:
			return sasl.NewPlainServer(sasl.StaticPlainUsers(users)), nil
		case "EXPIRING":
			return &expiringServer{now: now}, nil
		}
		m, ok := scram.ByName(mech)
		if !ok {
			return nil, fmt.Errorf("no mechanism %s", mech)
		}
		return m.NewServer(func(u string) (scram.Credential, bool) { c, ok := creds[mech][u]; return c, ok }, random), nil
	}
}

// expiringServer accepts "user:seconds" and expires that many seconds on.
type expiringServer struct {
	now    func() time.Time
	user   string
	expiry time.Time
}

func (e *expiringServer) Step(tok []byte) ([]byte, bool, error) {
	u, secs, _ := strings.Cut(string(tok), ":")
	n, err := strconv.Atoi(secs)
	if err != nil {
		return nil, false, sasl.Failf("bad token")
	}
	e.user, e.expiry = u, e.now().Add(time.Duration(n)*time.Second)
	return nil, true, nil
}
func (e *expiringServer) User() string      { return e.user }
func (e *expiringServer) Expiry() time.Time { return e.expiry }

// TestSessionTranscripts drives Session through testdata/session/*.txt.
// Commands:
//
//	session mechanisms=(PLAIN,SCRAM-SHA-512) [reauth=10s]
//	request key=ApiVersions|Metadata|...   any request but the SASL ones
//	handshake mechanism=PLAIN
//	authenticate token="\x00alice\x00alice-pw" [version=0]
//	client mechanism=SCRAM-SHA-512 user=alice password=alice-pw
//	authenticate client          the client conversation's next token
//	advance 5s
//
// Each prints what becomes of the request: pass, an answer, close.
func TestSessionTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/session", func(t *testing.T, path string) {
		now := time.Unix(1_700_000_000, 0)
		clock := func() time.Time { return now }
		var s *Session
		var client sasl.Client
		var challenge []byte
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "session":
				var mechs []string
				if a, ok := d.Arg("mechanisms"); ok {
					mechs = a.Vals
				}
				reauth := time.Duration(0)
				if d.HasArg("reauth") {
					var v string
					d.ScanArgs(t, "reauth", &v)
					reauth = mustParseDuration(t, v)
				}
				s = NewSession(SessionConfig{
					Mechanisms: mechs,
					NewServer:  testMechanisms(t, clock),
					MaxReauth:  func(string) time.Duration { return reauth },
					Now:        clock,
				})
				return ""
			case "advance":
				now = now.Add(mustParseDuration(t, d.CmdArgs[0].Key))
				return ""
			case "client":
				var mech, user, pw string
				d.ScanArgs(t, "mechanism", &mech)
				d.ScanArgs(t, "user", &user)
				d.ScanArgs(t, "password", &pw)
				m, _ := scram.ByName(mech)
				client, challenge = m.NewClient(user, pw, newSeeded()), nil
				return ""
			case "request":
				var name string
				d.ScanArgs(t, "key", &name)
				key := keyByName(t, name)
				if !s.Admit(key) {
					return "refused before decoding: close"
				}
				return show(s.Handle(key, kmsg.RequestForKey(key)))
			case "handshake":
				req := kmsg.NewPtrSASLHandshakeRequest()
				req.Version = 1
				d.ScanArgs(t, "mechanism", &req.Mechanism)
				if !s.Admit(req.Key()) {
					return "refused before decoding: close"
				}
				return show(s.Handle(req.Key(), req))
			case "authenticate":
				req := kmsg.NewPtrSASLAuthenticateRequest()
				req.Version = 2
				if d.HasArg("version") {
					d.ScanArgs(t, "version", &req.Version)
				}
				if d.HasArg("client") {
					tok, _, err := client.Step(challenge)
					if err != nil {
						return "client error: " + err.Error()
					}
					req.SASLAuthBytes = tok
				} else {
					var tok string
					d.ScanArgs(t, "token", &tok)
					unq, err := strconv.Unquote(`"` + tok + `"`)
					if err != nil {
						t.Fatal(err)
					}
					req.SASLAuthBytes = []byte(unq)
				}
				if !s.Admit(req.Key()) {
					return "refused before decoding: close"
				}
				o := s.Handle(req.Key(), req)
				if r, ok := o.Response.(*kmsg.SASLAuthenticateResponse); ok {
					challenge = r.SASLAuthBytes
				}
				out := show(o)
				if client != nil && d.HasArg("client") && o.Principal != "" {
					_, done, err := client.Step(challenge)
					out += fmt.Sprintf("\nclient: done=%v err=%v", done, err)
				}
				return out
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func keyByName(t *testing.T, name string) int16 {
	for k := int16(0); k < 100; k++ {
		if kmsg.NameForKey(k) == name {
			return k
		}
	}
	t.Fatalf("no API %s", name)
	return -1
}

func mustParseDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func show(o Outcome) string {
	var parts []string
	switch r := o.Response.(type) {
	case nil:
	case *kmsg.SASLHandshakeResponse:
		parts = append(parts, fmt.Sprintf("answer SaslHandshake error=%d mechanisms=%v", r.ErrorCode, r.SupportedMechanisms))
	case *kmsg.SASLAuthenticateResponse:
		s := fmt.Sprintf("answer SaslAuthenticate error=%d", r.ErrorCode)
		if r.ErrorMessage != nil {
			s += fmt.Sprintf(" message=%q", *r.ErrorMessage)
		}
		if len(r.SASLAuthBytes) > 0 {
			s += fmt.Sprintf(" bytes=%d", len(r.SASLAuthBytes))
		}
		s += fmt.Sprintf(" lifetime=%d", r.SessionLifetimeMillis)
		parts = append(parts, s)
	default:
		parts = append(parts, fmt.Sprintf("answer %T", r))
	}
	if o.Principal != "" {
		parts = append(parts, "principal "+o.Principal)
	}
	switch {
	case o.Close:
		parts = append(parts, "close: "+o.Reason)
	case o.Pass():
		parts = append(parts, "pass")
	}
	return strings.Join(parts, "\n")
}
