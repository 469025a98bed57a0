package authz

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func str(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	lit := a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "orders", "*")
	star := a(Allow, "User:alice", OpRead, ResourceTopic, PatternLiteral, "*", "*")
	pre := a(Deny, "User:bob", OpWrite, ResourceTopic, PatternPrefixed, "ord", "10.0.0.1")
	grp := a(Allow, "User:alice", OpRead, ResourceGroup, PatternLiteral, "orders", "*")
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	with := func(f func(*Filter)) Filter { c := any; f(&c); return c }
	tests := []struct {
		name   string
		filter Filter
		acl    ACL
		want   bool
	}{
		{"any matches everything", any, pre, true},
		{"resource type", with(func(f *Filter) { f.ResourceType = ResourceGroup }), lit, false},
		{"resource type match", with(func(f *Filter) { f.ResourceType = ResourceGroup }), grp, true},
		{"pattern type literal", with(func(f *Filter) { f.PatternType = PatternLiteral }), pre, false},
		{"pattern type prefixed", with(func(f *Filter) { f.PatternType = PatternPrefixed }), pre, true},
		{"any pattern compares names", with(func(f *Filter) { f.Name = str("orders") }), pre, false},
		{"any pattern, same name", with(func(f *Filter) { f.Name = str("ord") }), pre, true},
		{"literal filter, literal star is not orders", with(func(f *Filter) { f.Name = str("orders"); f.PatternType = PatternLiteral }), star, false},
		{"match: literal name", with(func(f *Filter) { f.Name = str("orders"); f.PatternType = PatternMatch }), lit, true},
		{"match: wildcard", with(func(f *Filter) { f.Name = str("orders"); f.PatternType = PatternMatch }), star, true},
		{"match: prefix of the name", with(func(f *Filter) { f.Name = str("orders"); f.PatternType = PatternMatch }), pre, true},
		{"match: not a prefix", with(func(f *Filter) { f.Name = str("or"); f.PatternType = PatternMatch }), pre, false},
		{"match: other literal", with(func(f *Filter) { f.Name = str("orders2"); f.PatternType = PatternMatch }), lit, false},
		{"principal", with(func(f *Filter) { f.Principal = str("User:alice") }), pre, false},
		{"principal match", with(func(f *Filter) { f.Principal = str("User:bob") }), pre, true},
		{"host", with(func(f *Filter) { f.Host = str("*") }), pre, false},
		{"host match", with(func(f *Filter) { f.Host = str("10.0.0.1") }), pre, true},
		{"operation", with(func(f *Filter) { f.Operation = OpRead }), pre, false},
		{"operation ALL is not a wildcard in filters", with(func(f *Filter) { f.Operation = OpAll }), pre, false},
		{"permission", with(func(f *Filter) { f.Permission = Allow }), pre, false},
		{"permission match", with(func(f *Filter) { f.Permission = Deny }), pre, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.filter.Matches(&tt.acl); got != tt.want {
				t.Fatalf("Matches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFilterValidate(t *testing.T) {
	ok := Filter{ResourceType: ResourceAny, PatternType: PatternMatch, Operation: OpAll, Permission: Allow}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		f    func(*Filter)
		want string
	}{
		{func(f *Filter) { f.ResourceType = ResourceUnknown }, "Unknown patternFilter."},
		{func(f *Filter) { f.ResourceType = 8 }, "Unknown patternFilter."},
		{func(f *Filter) { f.PatternType = PatternUnknown }, "Unknown patternFilter."},
		{func(f *Filter) { f.Operation = OpUnknown }, "Unknown entryFilter."},
		{func(f *Filter) { f.Operation = 16 }, "Unknown entryFilter."},
		{func(f *Filter) { f.Permission = -1 }, "Unknown entryFilter."},
	} {
		f := ok
		tt.f(&f)
		if err := f.Validate(); err == nil || err.Error() != tt.want {
			t.Errorf("Validate(%+v) = %v, want %q", f, err, tt.want)
		}
	}
}

func TestValidateCreation(t *testing.T) {
	good := kmsg.CreateACLsRequestCreation{ResourceType: 2, ResourceName: "t", ResourcePatternType: 4,
		Principal: "User:alice", Host: "*", Operation: 15, PermissionType: 2}
	if err := ValidateCreation(&good); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		f    func(*kmsg.CreateACLsRequestCreation)
		want string
	}{
		{func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = 1 }, "Invalid resourceType ANY"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = 0 }, "Invalid resourceType UNKNOWN"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.ResourceType = 4 }, "The only valid name for the CLUSTER resource is kafka-cluster"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.ResourceName = "" }, "Invalid empty resource name"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.ResourcePatternType = 2 }, "Invalid patternType MATCH"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.Operation = 1 }, "Invalid operation ANY"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.Operation = 16 }, "Invalid operation UNKNOWN"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.PermissionType = 1 }, "Invalid permissionType ANY"},
		{func(c *kmsg.CreateACLsRequestCreation) { c.Principal = "alice" }, "Could not parse principal from `alice`"},
	} {
		c := good
		tt.f(&c)
		if err := ValidateCreation(&c); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("ValidateCreation(%+v) = %v, want %q", c, err, tt.want)
		}
	}
}
