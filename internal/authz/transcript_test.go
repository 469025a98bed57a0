package authz

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDecideTranscripts runs testdata/decide: ACLs and configs in,
// decisions out. Commands:
//
//	config [enabled] [super=User:a;User:b] [allow-everyone]
//	acl ALLOW|DENY <principal> <operation> <type>:<LITERAL|PREFIXED>:<name> [host=<h>]
//	decide <principal> <host> <operation> <type> <name>
//	by-type <principal> <host> <operation> <type>
//	ops <principal> <host> <type> <name>
//
// Rewrite the expected output with -rewrite and read the diff.
func TestDecideTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/decide", func(t *testing.T, path string) {
		var cfg Config
		var acls []ACL
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				cfg = configCommand(t, d)
				return "ok"
			case "acl":
				var out strings.Builder
				for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
					acl := parseACLLine(t, line)
					acls = append(acls, acl)
					fmt.Fprintf(&out, "%s\n", &acl)
				}
				return out.String()
			case "decide":
				return decideLines(t, d.Input, func(s Session, f []string) string {
					op, rt := mustOp(t, f[0]), mustType(t, f[1])
					return Decide(NewIndex(acls), &cfg, s, op, rt, f[2]).String()
				})
			case "by-type":
				return decideLines(t, d.Input, func(s Session, f []string) string {
					return fmt.Sprint(DecideByResourceType(NewIndex(acls), &cfg, s, mustOp(t, f[0]), mustType(t, f[1])))
				})
			case "ops":
				return decideLines(t, d.Input, func(s Session, f []string) string {
					rt := mustType(t, f[0])
					bits := Operations(NewIndex(acls), &cfg, s, rt, f[1])
					var names []string
					for _, op := range SupportedOperations(rt) {
						if bits&(1<<op) != 0 {
							names = append(names, op.String())
						}
					}
					return fmt.Sprintf("%d [%s]", bits, strings.Join(names, " "))
				})
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// decideLines runs fn for each input line "<principal> <host> args...",
// printing the line and its answer.
func decideLines(t *testing.T, input string, fn func(Session, []string) string) string {
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			t.Fatalf("short line %q", line)
		}
		p, err := ParsePrincipal(f[0])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%s: %s\n", line, fn(Session{Principal: p, Host: f[1]}, f[2:]))
	}
	return out.String()
}

func parseACLLine(t *testing.T, line string) ACL {
	f := strings.Fields(line)
	if len(f) < 4 {
		t.Fatalf("acl line %q", line)
	}
	perm, err := ParsePermission(f[0])
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePrincipal(f[1])
	if err != nil {
		t.Fatal(err)
	}
	res := strings.SplitN(f[3], ":", 3)
	if len(res) != 3 {
		t.Fatalf("resource %q is not type:pattern:name", f[3])
	}
	pt, err := ParsePatternType(res[1])
	if err != nil {
		t.Fatal(err)
	}
	host := Wildcard
	if len(f) > 4 {
		host = strings.TrimPrefix(f[4], "host=")
	}
	return ACL{Permission: perm, Principal: p, Operation: mustOp(t, f[2]), ResourceType: mustType(t, res[0]),
		PatternType: pt, ResourceName: res[2], Host: host}
}

func mustOp(t *testing.T, s string) Operation {
	op, err := ParseOperation(s)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func mustType(t *testing.T, s string) ResourceType {
	rt, err := ParseResourceType(s)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// configCommand reads a config directive's arguments: enabled,
// allow-everyone and super=User:a;User:b.
func configCommand(t *testing.T, d *datadriven.TestData) Config {
	cfg := Config{Enabled: d.HasArg("enabled"), AllowEveryoneIfNoACL: d.HasArg("allow-everyone")}
	if d.HasArg("super") {
		var s string
		d.ScanArgs(t, "super", &s)
		parsed, err := ParseConfig(func(k string) (string, bool) { return s, k == SuperUsersConfig })
		if err != nil {
			t.Fatal(err)
		}
		cfg.SuperUsers = parsed.SuperUsers
	}
	return cfg
}
