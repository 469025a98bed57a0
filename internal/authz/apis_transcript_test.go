package authz

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAPITranscripts runs testdata/apis: one transcript per API, each
// request authorized for principals with and without the ACLs it needs.
// Commands:
//
//	config [enabled] [super=User:a;User:b] [allow-everyone] [auto-create]
//	acls                    one ACL a line, as in testdata/decide
//	authorize <key> v<version> <principal> [host=<h>]
//	<request as JSON>
//	[<the response the handler gives, as JSON>]
//
// authorize prints what is rejected, or what is served and the answer
// after Finish (to the handler's response, or an empty one). JSON leaves
// out zero values; topic ids are written as their first byte in hex
// ("7e01..." is topic t, "7e02..." topic u, as in fakeTopics).
func TestAPITranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/apis", func(t *testing.T, path string) {
		cfg := Config{Enabled: true}
		env := Env{Topics: fakeTopics{}}
		var acls []ACL
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				cfg = configCommand(t, d)
				env.AutoCreateTopics = d.HasArg("auto-create")
				return "ok"
			case "acls":
				acls = nil
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					if line = strings.TrimSpace(line); line != "" {
						acls = append(acls, parseACLLine(t, line))
					}
				}
				return fmt.Sprintf("%d acls", len(acls))
			case "authorize":
				if len(d.CmdArgs) < 3 {
					t.Fatal("authorize <key> v<version> <principal>")
				}
				key, _ := strconv.Atoi(d.CmdArgs[0].Key)
				version, _ := strconv.Atoi(strings.TrimPrefix(d.CmdArgs[1].Key, "v"))
				p, err := ParsePrincipal(d.CmdArgs[2].String())
				if err != nil {
					t.Fatal(err)
				}
				s := Session{Principal: p, Host: "10.0.0.1"}
				if d.HasArg("host") {
					d.ScanArgs(t, "host", &s.Host)
				}
				lines := strings.SplitN(strings.TrimSpace(d.Input), "\n", 2)
				req := kmsg.RequestForKey(int16(key))
				req.SetVersion(int16(version))
				if err := json.Unmarshal([]byte(lines[0]), req); err != nil {
					t.Fatalf("request: %v", err)
				}
				req.SetVersion(int16(version))
				resp := req.ResponseKind()
				if len(lines) > 1 {
					if err := json.Unmarshal([]byte(lines[1]), resp); err != nil {
						t.Fatalf("response: %v", err)
					}
				}
				v := Authorize(NewChecker(NewIndex(acls), &cfg, s), env, req)
				if v.Reject != nil {
					return "rejected: " + compactJSON(t, v.Reject)
				}
				served := "as sent"
				if v.Request != req {
					served = compactJSON(t, v.Request)
				}
				return "served: " + served + "\nanswer: " + compactJSON(t, v.Finish(resp))
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// compactJSON is a message as JSON without its zero values, version and
// unknown tags; 16-byte ids as the hex of their first two bytes.
func compactJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	x = prune(x)
	if x == nil {
		return "{}"
	}
	out, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func prune(x any) any {
	switch v := x.(type) {
	case map[string]any:
		for k, e := range v {
			if k == "Version" || k == "UnknownTags" {
				delete(v, k)
				continue
			}
			if p := prune(e); p == nil {
				delete(v, k)
			} else {
				v[k] = p
			}
		}
		if len(v) == 0 {
			return nil
		}
		return v
	case []any:
		if len(v) == 16 && isBytes(v) {
			if allZero(v) {
				return nil
			}
			return fmt.Sprintf("%02x%02x..", int(v[0].(float64)), int(v[1].(float64)))
		}
		out := make([]any, 0, len(v))
		for _, e := range v {
			if p := prune(e); p != nil {
				out = append(out, p)
			} else {
				out = append(out, map[string]any{})
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if v == "" {
			return nil
		}
	case float64:
		if v == 0 {
			return nil
		}
	case bool:
		if !v {
			return nil
		}
	}
	return x
}

func isBytes(v []any) bool {
	for _, e := range v {
		f, ok := e.(float64)
		if !ok || f < 0 || f > 255 || f != float64(int(f)) {
			return false
		}
	}
	return true
}

func allZero(v []any) bool {
	for _, e := range v {
		if e.(float64) != 0 {
			return false
		}
	}
	return true
}
