package authz

import (
	"fmt"
	"strings"

	"weir/internal/metadata"
)

// ACL is an ACL of the image with its codes typed and its principal
// parsed.
type ACL struct {
	ID           [16]byte
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    Principal
	Host         string
	Operation    Operation
	Permission   Permission
}

// FromImage converts an ACL of the metadata image. The image checked its
// codes and principal when it applied the record.
func FromImage(a *metadata.ACL) ACL {
	p, _ := ParsePrincipal(a.Principal)
	return ACL{ID: a.ID, ResourceType: ResourceType(a.ResourceType), ResourceName: a.ResourceName,
		PatternType: PatternType(a.PatternType), Principal: p, Host: a.Host,
		Operation: Operation(a.Operation), Permission: Permission(a.PermissionType)}
}

// String formats an ACL as kafka-acls lists it.
func (a *ACL) String() string {
	return fmt.Sprintf("(principal=%s, host=%s, operation=%s, permissionType=%s) on %s:%s:%s",
		a.Principal, a.Host, a.Operation, a.Permission, a.ResourceType, a.PatternType, a.ResourceName)
}

// Index holds a set of ACLs arranged for decisions: per resource type,
// the LITERAL ACLs by name, the wildcard ("*") ones, and the PREFIXED
// ones by prefix with the prefix lengths in use, so that a decision
// looks at exactly the ACLs whose pattern matches the resource. An Index
// is immutable and safe for concurrent use.
type Index struct {
	types [ResourceUser + 1]typeIndex
	n     int
}

type typeIndex struct {
	literal    map[string][]*ACL
	wildcard   []*ACL
	prefixed   map[string][]*ACL
	prefixLens []int // distinct lengths of prefixed names, ascending
}

// NewIndex indexes acls. ACLs whose codes are not those of an ACL (as
// the image guarantees they are) are left out.
func NewIndex(acls []ACL) *Index {
	x := &Index{}
	for i := range acls {
		a := &acls[i]
		if !a.ResourceType.Concrete() {
			continue
		}
		t := &x.types[a.ResourceType]
		switch {
		case a.PatternType == PatternLiteral && a.ResourceName == Wildcard:
			t.wildcard = append(t.wildcard, a)
		case a.PatternType == PatternLiteral:
			if t.literal == nil {
				t.literal = make(map[string][]*ACL)
			}
			t.literal[a.ResourceName] = append(t.literal[a.ResourceName], a)
		case a.PatternType == PatternPrefixed:
			if t.prefixed == nil {
				t.prefixed = make(map[string][]*ACL)
			}
			if _, seen := t.prefixed[a.ResourceName]; !seen {
				t.prefixLens = insertLen(t.prefixLens, len(a.ResourceName))
			}
			t.prefixed[a.ResourceName] = append(t.prefixed[a.ResourceName], a)
		default:
			continue
		}
		x.n++
	}
	return x
}

func insertLen(lens []int, n int) []int {
	for i, l := range lens {
		if l == n {
			return lens
		}
		if l > n {
			return append(lens[:i], append([]int{n}, lens[i:]...)...)
		}
	}
	return append(lens, n)
}

// IndexImage indexes the ACLs of an image's set.
func IndexImage(set *metadata.ACLs) *Index {
	all := set.All()
	acls := make([]ACL, len(all))
	for i, a := range all {
		acls[i] = FromImage(a)
	}
	return NewIndex(acls)
}

// Len is the number of ACLs indexed.
func (x *Index) Len() int { return x.n }

// Rule is why a decision came out as it did.
type Rule uint8

// The rules, in the order a decision tries them.
const (
	RuleNoAuthorizer Rule = iota // no authorizer configured: allowed
	RuleSuperUser                // a super user: allowed
	RuleDenyACL                  // an ACL denies: denied, whatever allows
	RuleAllowACL                 // an ACL allows and none denies
	RuleNoMatch                  // ACLs name the resource, none for this principal, host and operation: denied
	RuleDefault                  // no ACL names the resource: allow.everyone.if.no.acl.found decides
)

var ruleNames = [...]string{"no authorizer", "super user", "denied by acl", "allowed by acl", "no matching acl", "no acl for the resource"}

func (r Rule) String() string { return ruleNames[r] }

// Decision is the outcome of one authorization.
type Decision struct {
	Allowed bool
	Rule    Rule
	// ACL is the deciding ACL for RuleDenyACL and RuleAllowACL.
	ACL *ACL
}

func (d Decision) String() string {
	verdict := "DENIED"
	if d.Allowed {
		verdict = "ALLOWED"
	}
	if d.ACL != nil {
		return fmt.Sprintf("%s (%s: %s)", verdict, d.Rule, d.ACL)
	}
	return fmt.Sprintf("%s (%s)", verdict, d.Rule)
}

// Decide is Kafka's StandardAuthorizer: may s perform op on the resource
// of type t named name? Super users may do anything. Otherwise the ACLs
// whose pattern matches the resource are those of its type that are
// LITERAL with its name, LITERAL "*", or PREFIXED with a prefix of its
// name. Of those, the ACLs that apply are the ones for s's principal or
// User:*, for s's host or "*", and for op, or for ALL; an ALLOW ACL for
// READ, WRITE, DELETE or ALTER also applies to DESCRIBE, and one for
// ALTER_CONFIGS to DESCRIBE_CONFIGS (DENY ACLs imply nothing). A DENY
// that applies wins; else an ALLOW that applies allows; else, if any ACL
// matches the resource the answer is DENIED, and if none does,
// allow.everyone.if.no.acl.found decides.
func Decide(x *Index, cfg *Config, s Session, op Operation, t ResourceType, name string) Decision {
	if !cfg.Enabled {
		return Decision{Allowed: true, Rule: RuleNoAuthorizer}
	}
	if cfg.SuperUsers[s.Principal] {
		return Decision{Allowed: true, Rule: RuleSuperUser}
	}
	if !t.Concrete() || x == nil {
		return Decision{Allowed: cfg.AllowEveryoneIfNoACL, Rule: RuleDefault}
	}
	ti := &x.types[t]
	var allow *ACL
	matched := false
	scan := func(acls []*ACL) *ACL {
		for _, a := range acls {
			matched = true
			switch applies(a, s, op) {
			case Deny:
				return a
			case Allow:
				allow = a
			}
		}
		return nil
	}
	deny := scan(ti.literal[name])
	for _, l := range ti.prefixLens {
		if deny != nil || l > len(name) {
			break
		}
		deny = scan(ti.prefixed[name[:l]])
	}
	if deny == nil {
		deny = scan(ti.wildcard)
	}
	switch {
	case deny != nil:
		return Decision{Allowed: false, Rule: RuleDenyACL, ACL: deny}
	case allow != nil:
		return Decision{Allowed: true, Rule: RuleAllowACL, ACL: allow}
	case matched:
		return Decision{Allowed: false, Rule: RuleNoMatch}
	}
	return Decision{Allowed: cfg.AllowEveryoneIfNoACL, Rule: RuleDefault}
}

// applies returns the permission of a matching ACL that applies to s
// and op, or PermissionUnknown when it does not apply.
func applies(a *ACL, s Session, op Operation) Permission {
	if a.Principal != s.Principal && a.Principal != everyone {
		return PermissionUnknown
	}
	if a.Host != Wildcard && a.Host != s.Host {
		return PermissionUnknown
	}
	if a.Operation != OpAll && a.Operation != op {
		if a.Permission != Allow || !implies(a.Operation, op) {
			return PermissionUnknown
		}
	}
	return a.Permission
}

// implies reports whether an ALLOW ACL for granted also allows op.
func implies(granted, op Operation) bool {
	switch op {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}

// hardcodedName is the resource name Kafka's authorizeByResourceType
// first tries, so that super users and a default allow pass.
const hardcodedName = "hardcode"

// DecideByResourceType is Kafka's Authorizer.authorizeByResourceType:
// may s perform op on at least one resource of type t? It is allowed if
// op is allowed on a resource named "hardcode" (a super user, a wildcard
// or default allow), or if an ALLOW ACL for s (or User:*), its host (or
// "*") and op (or ALL; no implied operations) is a wildcard, or names
// resources that no such DENY ACL covers: a LITERAL name that no LITERAL
// DENY repeats and no PREFIXED DENY is a prefix of, or a prefix that no
// PREFIXED DENY is a prefix of. A wildcard DENY denies outright.
func DecideByResourceType(x *Index, cfg *Config, s Session, op Operation, t ResourceType) bool {
	if Decide(x, cfg, s, op, t, hardcodedName).Allowed {
		return true
	}
	if !t.Concrete() || x == nil {
		return false
	}
	ti := &x.types[t]
	pick := func(a *ACL) bool {
		return (a.Principal == s.Principal || a.Principal == everyone) &&
			(a.Host == s.Host || a.Host == Wildcard) && (a.Operation == op || a.Operation == OpAll)
	}
	wildcardAllow := false
	for _, a := range ti.wildcard {
		if pick(a) {
			if a.Permission == Deny {
				return false
			}
			wildcardAllow = true
		}
	}
	if wildcardAllow {
		return true
	}
	denyLiteral := map[string]bool{}
	var denyPrefixes []string
	var allowLiteral, allowPrefixes []string
	for name, acls := range ti.literal {
		for _, a := range acls {
			if pick(a) {
				if a.Permission == Deny {
					denyLiteral[name] = true
				} else {
					allowLiteral = append(allowLiteral, name)
				}
			}
		}
	}
	for name, acls := range ti.prefixed {
		for _, a := range acls {
			if pick(a) {
				if a.Permission == Deny {
					denyPrefixes = append(denyPrefixes, name)
				} else {
					allowPrefixes = append(allowPrefixes, name)
				}
			}
		}
	}
	dominated := func(name string) bool {
		for _, p := range denyPrefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, name := range allowLiteral {
		if !denyLiteral[name] && !dominated(name) {
			return true
		}
	}
	for _, name := range allowPrefixes {
		if !dominated(name) {
			return true
		}
	}
	return false
}

// Operations is the authorized-operations bitfield of a resource for s:
// the supported operations of its type that Decide allows. Without an
// authorizer every supported operation is in it, as in Kafka.
func Operations(x *Index, cfg *Config, s Session, t ResourceType, name string) int32 {
	var ops []Operation
	for _, op := range SupportedOperations(t) {
		if Decide(x, cfg, s, op, t, name).Allowed {
			ops = append(ops, op)
		}
	}
	return OperationBits(ops...)
}
