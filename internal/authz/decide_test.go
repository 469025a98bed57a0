package authz

import (
	"net/netip"
	"testing"
)

// a builds an ACL: allow or deny principal the operation on a resource,
// from host.
func a(perm Permission, principal string, op Operation, t ResourceType, pattern PatternType, name, host string) ACL {
	p, err := ParsePrincipal(principal)
	if err != nil {
		panic(err)
	}
	return ACL{ResourceType: t, ResourceName: name, PatternType: pattern, Principal: p, Host: host, Operation: op, Permission: perm}
}

func TestDecide(t *testing.T) {
	alice := Session{Principal: User("alice"), Host: "10.0.0.1"}
	bob := Session{Principal: User("bob"), Host: "10.0.0.2"}
	admin := Session{Principal: User("admin"), Host: "10.0.0.9"}
	svc := Session{Principal: Principal{Type: "Service", Name: "alice"}, Host: "10.0.0.1"}
	on := Config{Enabled: true, SuperUsers: map[Principal]bool{User("admin"): true}}
	open := on
	open.AllowEveryoneIfNoACL = true
	tests := []struct {
		name    string
		cfg     Config
		acls    []ACL
		s       Session
		op      Operation
		rt      ResourceType
		res     string
		allowed bool
		rule    Rule
	}{
		{"no authorizer allows anything", Config{}, nil, bob, OpDelete, ResourceTopic, "t", true, RuleNoAuthorizer},
		{"no acls: deny by default", on, nil, alice, OpRead, ResourceTopic, "t", false, RuleDefault},
		{"no acls: allow everyone", open, nil, alice, OpRead, ResourceTopic, "t", true, RuleDefault},
		{"super user beats a deny", on, []ACL{a(Deny, "User:admin", OpAll, ResourceTopic, PatternLiteral, "t", "*")}, admin, OpWrite, ResourceTopic, "t", true, RuleSuperUser},
		{"literal allow", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpRead, ResourceTopic, "t", true, RuleAllowACL},
		{"literal allow is not a prefix", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpRead, ResourceTopic, "tt", false, RuleDefault},
		{"literal name of another type", on, []ACL{a(Allow, "User:alice", OpRead, ResourceGroup, PatternLiteral, "t", "*")}, alice, OpRead, ResourceTopic, "t", false, RuleDefault},
		{"prefixed allow", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternPrefixed, "ord", "*")}, alice, OpRead, ResourceTopic, "orders", true, RuleAllowACL},
		{"prefixed equal to the name", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternPrefixed, "orders", "*")}, alice, OpRead, ResourceTopic, "orders", true, RuleAllowACL},
		{"prefix longer than the name", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternPrefixed, "orders-eu", "*")}, alice, OpRead, ResourceTopic, "orders", false, RuleDefault},
		{"wildcard allow", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "*", "*")}, alice, OpRead, ResourceTopic, "anything", true, RuleAllowACL},
		{"prefixed star is not a wildcard", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternPrefixed, "*", "*")}, alice, OpRead, ResourceTopic, "t", false, RuleDefault},
		{"User:* matches everyone", on, []ACL{a(Allow, "User:*", OpWrite, ResourceTopic, PatternLiteral, "t", "*")}, bob, OpWrite, ResourceTopic, "t", true, RuleAllowACL},
		{"User:* matches other principal types", on, []ACL{a(Allow, "User:*", OpWrite, ResourceTopic, PatternLiteral, "t", "*")}, svc, OpWrite, ResourceTopic, "t", true, RuleAllowACL},
		{"principal type matters", on, []ACL{a(Allow, "User:alice", OpWrite, ResourceTopic, PatternLiteral, "t", "*")}, svc, OpWrite, ResourceTopic, "t", false, RuleNoMatch},
		{"acls for others deny even with allow everyone", open, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, bob, OpRead, ResourceTopic, "t", false, RuleNoMatch},
		{"allow everyone applies per resource", open, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, bob, OpRead, ResourceTopic, "u", true, RuleDefault},
		{"host matches", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "10.0.0.1")}, alice, OpRead, ResourceTopic, "t", true, RuleAllowACL},
		{"host differs", on, []ACL{a(Allow, "User:bob", OpRead, ResourceTopic, PatternLiteral, "t", "10.0.0.1")}, bob, OpRead, ResourceTopic, "t", false, RuleNoMatch},
		{"deny wins over allow", on, []ACL{
			a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*"),
			a(Deny, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpRead, ResourceTopic, "t", false, RuleDenyACL},
		{"prefixed deny wins over literal allow", on, []ACL{
			a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "orders", "*"),
			a(Deny, "User:*", OpRead, ResourceTopic, PatternPrefixed, "or", "*")}, alice, OpRead, ResourceTopic, "orders", false, RuleDenyACL},
		{"wildcard deny wins over literal allow", on, []ACL{
			a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "orders", "*"),
			a(Deny, "User:alice", OpAll, ResourceTopic, PatternLiteral, "*", "10.0.0.1")}, alice, OpRead, ResourceTopic, "orders", false, RuleDenyACL},
		{"deny from another host does not apply", on, []ACL{
			a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "orders", "*"),
			a(Deny, "User:alice", OpRead, ResourceTopic, PatternLiteral, "orders", "10.9.9.9")}, alice, OpRead, ResourceTopic, "orders", true, RuleAllowACL},
		{"ALL allows every operation", on, []ACL{a(Allow, "User:alice", OpAll, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpAlterConfigs, ResourceTopic, "t", true, RuleAllowACL},
		{"READ implies DESCRIBE", on, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribe, ResourceTopic, "t", true, RuleAllowACL},
		{"WRITE implies DESCRIBE", on, []ACL{a(Allow, "User:alice", OpWrite, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribe, ResourceTopic, "t", true, RuleAllowACL},
		{"DELETE implies DESCRIBE", on, []ACL{a(Allow, "User:alice", OpDelete, ResourceGroup, PatternLiteral, "g", "*")}, alice, OpDescribe, ResourceGroup, "g", true, RuleAllowACL},
		{"ALTER implies DESCRIBE", on, []ACL{a(Allow, "User:alice", OpAlter, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribe, ResourceTopic, "t", true, RuleAllowACL},
		{"CREATE does not imply DESCRIBE", on, []ACL{a(Allow, "User:alice", OpCreate, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribe, ResourceTopic, "t", false, RuleNoMatch},
		{"ALTER_CONFIGS implies DESCRIBE_CONFIGS", on, []ACL{a(Allow, "User:alice", OpAlterConfigs, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribeConfigs, ResourceTopic, "t", true, RuleAllowACL},
		{"DESCRIBE implies nothing", on, []ACL{a(Allow, "User:alice", OpDescribe, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpRead, ResourceTopic, "t", false, RuleNoMatch},
		{"ALTER does not imply DESCRIBE_CONFIGS", on, []ACL{a(Allow, "User:alice", OpAlter, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribeConfigs, ResourceTopic, "t", false, RuleNoMatch},
		{"a DENY READ does not deny DESCRIBE", on, []ACL{
			a(Allow, "User:alice", OpDescribe, ResourceTopic, PatternLiteral, "t", "*"),
			a(Deny, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribe, ResourceTopic, "t", true, RuleAllowACL},
		{"a DENY ALL denies DESCRIBE", on, []ACL{
			a(Allow, "User:alice", OpDescribe, ResourceTopic, PatternLiteral, "t", "*"),
			a(Deny, "User:alice", OpAll, ResourceTopic, PatternLiteral, "t", "*")}, alice, OpDescribe, ResourceTopic, "t", false, RuleDenyACL},
		{"cluster resource", on, []ACL{a(Allow, "User:alice", OpIdempotentWrite, ResourceCluster, PatternLiteral, ClusterName, "*")}, alice, OpIdempotentWrite, ResourceCluster, ClusterName, true, RuleAllowACL},
		{"transactional id prefix", on, []ACL{a(Allow, "User:alice", OpWrite, ResourceTransactionalID, PatternPrefixed, "app-", "*")}, alice, OpWrite, ResourceTransactionalID, "app-1", true, RuleAllowACL},
		{"delegation token", on, []ACL{a(Allow, "User:alice", OpDescribe, ResourceDelegationToken, PatternLiteral, "tok", "*")}, alice, OpDescribe, ResourceDelegationToken, "tok", true, RuleAllowACL},
		{"user resource", on, []ACL{a(Allow, "User:alice", OpCreateTokens, ResourceUser, PatternLiteral, "User:bob", "*")}, alice, OpCreateTokens, ResourceUser, "User:bob", true, RuleAllowACL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(NewIndex(tt.acls), &tt.cfg, tt.s, tt.op, tt.rt, tt.res)
			if d.Allowed != tt.allowed || d.Rule != tt.rule {
				t.Fatalf("Decide = %s, want allowed=%v rule=%q", d, tt.allowed, tt.rule)
			}
		})
	}
}

func TestDecideByResourceType(t *testing.T) {
	alice := Session{Principal: User("alice"), Host: "h"}
	on := Config{Enabled: true, SuperUsers: map[Principal]bool{User("admin"): true}}
	open := on
	open.AllowEveryoneIfNoACL = true
	w := func(perm Permission, pattern PatternType, name string) ACL {
		return a(perm, "User:alice", OpWrite, ResourceTopic, pattern, name, "*")
	}
	tests := []struct {
		name string
		cfg  Config
		s    Session
		acls []ACL
		want bool
	}{
		{"no authorizer", Config{}, alice, nil, true},
		{"super user", on, Session{Principal: User("admin")}, nil, true},
		{"no acls, deny by default", on, alice, nil, false},
		{"no acls, allow everyone", open, alice, nil, true},
		{"a literal allow", on, alice, []ACL{w(Allow, PatternLiteral, "t")}, true},
		{"a prefixed allow", on, alice, []ACL{w(Allow, PatternPrefixed, "t")}, true},
		{"a wildcard allow", on, alice, []ACL{w(Allow, PatternLiteral, "*")}, true},
		{"literal allow denied literally", on, alice, []ACL{w(Allow, PatternLiteral, "t"), w(Deny, PatternLiteral, "t")}, false},
		{"literal allow denied by a prefix", on, alice, []ACL{w(Allow, PatternLiteral, "tx"), w(Deny, PatternPrefixed, "t")}, false},
		{"prefixed allow denied by a shorter prefix", on, alice, []ACL{w(Allow, PatternPrefixed, "tx"), w(Deny, PatternPrefixed, "t")}, false},
		{"prefixed allow not denied by a longer prefix", on, alice, []ACL{w(Allow, PatternPrefixed, "t"), w(Deny, PatternPrefixed, "tx")}, true},
		{"prefixed allow not denied by a literal", on, alice, []ACL{w(Allow, PatternPrefixed, "t"), w(Deny, PatternLiteral, "t")}, true},
		{"wildcard deny", on, alice, []ACL{w(Allow, PatternLiteral, "t"), w(Deny, PatternLiteral, "*")}, false},
		{"no implication: READ does not give WRITE", on, alice, []ACL{a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*")}, false},
		{"ALL counts", on, alice, []ACL{a(Allow, "User:alice", OpAll, ResourceTopic, PatternLiteral, "t", "*")}, true},
		{"other host", on, alice, []ACL{a(Allow, "User:alice", OpWrite, ResourceTopic, PatternLiteral, "t", "other")}, false},
		{"User:*", on, alice, []ACL{a(Allow, "User:*", OpWrite, ResourceTopic, PatternLiteral, "t", "*")}, true},
		{"another type", on, alice, []ACL{a(Allow, "User:alice", OpWrite, ResourceTransactionalID, PatternLiteral, "t", "*")}, false},
		{"an ACL on hardcode itself", on, alice, []ACL{w(Allow, PatternLiteral, hardcodedName)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DecideByResourceType(NewIndex(tt.acls), &tt.cfg, tt.s, OpWrite, ResourceTopic); got != tt.want {
				t.Fatalf("DecideByResourceType = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOperations(t *testing.T) {
	alice := Session{Principal: User("alice"), Host: "h"}
	on := Config{Enabled: true}
	idx := NewIndex([]ACL{
		a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "t", "*"),
		a(Allow, "User:alice", OpAlterConfigs, ResourceTopic, PatternLiteral, "t", "*"),
		a(Deny, "User:alice", OpAlterConfigs, ResourceTopic, PatternLiteral, "t", "*"),
	})
	// READ, and DESCRIBE by implication; DESCRIBE_CONFIGS is implied by
	// the ALTER_CONFIGS allow, which the deny does not take back.
	if got, want := Operations(idx, &on, alice, ResourceTopic, "t"), OperationBits(OpRead, OpDescribe, OpDescribeConfigs); got != want {
		t.Fatalf("topic ops %b, want %b", got, want)
	}
	if got, want := Operations(nil, &Config{}, alice, ResourceCluster, ClusterName), OperationBits(SupportedOperations(ResourceCluster)...); got != want {
		t.Fatalf("cluster ops without authorizer %b, want %b", got, want)
	}
	if got := OperationBits(OpRead, OpDescribe); got != 1<<3|1<<8 {
		t.Fatalf("bits %b", got)
	}
}

func TestHost(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"10.1.2.3", "10.1.2.3"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"::1", "0:0:0:0:0:0:0:1"},
		{"2001:db8::ff00:42:8329", "2001:db8:0:0:0:ff00:42:8329"},
		{"fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"},
	} {
		if got := Host(netip.MustParseAddr(tt.in)); got != tt.want {
			t.Errorf("Host(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseConfig(t *testing.T) {
	get := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, err := ParseConfig(get(map[string]string{
		ClassNameConfig:            " " + StandardAuthorizerClass,
		SuperUsersConfig:           "User:admin; User:broker ;;",
		AllowEveryoneIfNoACLConfig: "TRUE",
	}))
	if err != nil || !cfg.Enabled || !cfg.SuperUsers[User("admin")] || !cfg.SuperUsers[User("broker")] || len(cfg.SuperUsers) != 2 || !cfg.AllowEveryoneIfNoACL {
		t.Fatalf("ParseConfig = %+v, %v", cfg, err)
	}
	if cfg, err := ParseConfig(get(nil)); err != nil || cfg.Enabled || cfg.AllowEveryoneIfNoACL {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	for _, bad := range []map[string]string{
		{ClassNameConfig: "kafka.security.authorizer.AclAuthorizer"},
		{SuperUsersConfig: "admin"},
		{AllowEveryoneIfNoACLConfig: "yes"},
	} {
		if _, err := ParseConfig(get(bad)); err == nil {
			t.Errorf("ParseConfig(%v) accepted", bad)
		}
	}
}

func TestCodes(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want int8
		code func(string) (int8, error)
	}{
		{"transactional-id", 5, func(s string) (int8, error) { v, err := ParseResourceType(s); return int8(v), err }},
		{"Delegation_Token", 6, func(s string) (int8, error) { v, err := ParseResourceType(s); return int8(v), err }},
		{"prefixed", 4, func(s string) (int8, error) { v, err := ParsePatternType(s); return int8(v), err }},
		{"two_phase_commit", 15, func(s string) (int8, error) { v, err := ParseOperation(s); return int8(v), err }},
		{"IdempotentWrite", -1, func(s string) (int8, error) { v, err := ParseOperation(s); return int8(v), err }},
		{"deny", 2, func(s string) (int8, error) { v, err := ParsePermission(s); return int8(v), err }},
	} {
		got, err := tt.code(tt.s)
		if tt.want < 0 != (err != nil) || tt.want >= 0 && got != tt.want {
			t.Errorf("parse %q = %d, %v; want %d", tt.s, got, err, tt.want)
		}
	}
	if Operation(99).String() != "UNKNOWN" || OpTwoPhaseCommit.String() != "TWO_PHASE_COMMIT" || ResourceType(-1).String() != "UNKNOWN" {
		t.Fatal("names")
	}
}
