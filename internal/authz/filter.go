package authz

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Filter selects ACLs, as DescribeAcls and each DeleteAcls filter do
// (Kafka's AclBindingFilter). A nil name, principal or host matches any;
// ResourceAny, PatternAny, OpAny and PermissionAny match any value;
// PatternMatch matches the patterns that would apply to a resource named
// Name (the LITERAL name, the LITERAL wildcard, and PREFIXED prefixes of
// it).
type Filter struct {
	ResourceType ResourceType
	Name         *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// DescribeFilter is the filter of a DescribeAcls request.
func DescribeFilter(r *kmsg.DescribeACLsRequest) Filter {
	return Filter{ResourceType: ResourceType(r.ResourceType), Name: r.ResourceName, PatternType: PatternType(r.ResourcePatternType),
		Principal: r.Principal, Host: r.Host, Operation: Operation(r.Operation), Permission: Permission(r.PermissionType)}
}

// DeleteFilter is one filter of a DeleteAcls request.
func DeleteFilter(r *kmsg.DeleteACLsRequestFilter) Filter {
	return Filter{ResourceType: ResourceType(r.ResourceType), Name: r.ResourceName, PatternType: PatternType(r.ResourcePatternType),
		Principal: r.Principal, Host: r.Host, Operation: Operation(r.Operation), Permission: Permission(r.PermissionType)}
}

// known reports whether a code is one Kafka knows, other than UNKNOWN.
func known(code, last int8) bool { return code > 0 && code <= last }

// Validate refuses a filter that holds an unknown code, with the message
// Kafka's controller gives (INVALID_REQUEST).
func (f *Filter) Validate() error {
	if !known(int8(f.ResourceType), int8(ResourceUser)) || !known(int8(f.PatternType), int8(PatternPrefixed)) {
		return errors.New("Unknown patternFilter.")
	}
	if !known(int8(f.Operation), int8(OpTwoPhaseCommit)) || !known(int8(f.Permission), int8(Allow)) {
		return errors.New("Unknown entryFilter.")
	}
	return nil
}

// Matches reports whether the filter selects an ACL.
func (f *Filter) Matches(a *ACL) bool {
	return f.matchesPattern(a) && f.matchesEntry(a)
}

func (f *Filter) matchesPattern(a *ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.PatternType == PatternAny || f.PatternType == a.PatternType {
		return *f.Name == a.ResourceName
	}
	switch a.PatternType {
	case PatternLiteral:
		return *f.Name == a.ResourceName || a.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, a.ResourceName)
	}
	return false
}

func (f *Filter) matchesEntry(a *ACL) bool {
	return (f.Principal == nil || *f.Principal == a.Principal.String()) &&
		(f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == OpAny || f.Operation == a.Operation) &&
		(f.Permission == PermissionAny || f.Permission == a.Permission)
}

// Creation is one ACL of a CreateAcls request, without an id.
func Creation(c *kmsg.CreateACLsRequestCreation) ACL {
	p, _ := ParsePrincipal(c.Principal)
	return ACL{ResourceType: ResourceType(c.ResourceType), ResourceName: c.ResourceName, PatternType: PatternType(c.ResourcePatternType),
		Principal: p, Host: c.Host, Operation: Operation(c.Operation), Permission: Permission(c.PermissionType)}
}

// ValidateCreation checks one ACL of a CreateAcls request as Kafka does,
// and returns Kafka's message for the INVALID_REQUEST answer of an ACL it
// refuses: codes that are not those of an ACL (a concrete resource type,
// LITERAL or PREFIXED, an operation other than ANY, ALLOW or DENY), a
// CLUSTER resource not named kafka-cluster, an empty resource name, a
// principal without a type.
func ValidateCreation(c *kmsg.CreateACLsRequestCreation) error {
	rt, pt := ResourceType(c.ResourceType), PatternType(c.ResourcePatternType)
	op, perm := Operation(c.Operation), Permission(c.PermissionType)
	switch {
	case !rt.Concrete():
		return fmt.Errorf("Invalid resourceType %s", rt)
	case rt == ResourceCluster && c.ResourceName != ClusterName:
		return fmt.Errorf("The only valid name for the CLUSTER resource is %s", ClusterName)
	case c.ResourceName == "":
		return errors.New("Invalid empty resource name")
	case pt != PatternLiteral && pt != PatternPrefixed:
		return fmt.Errorf("Invalid patternType %s", pt)
	case !known(int8(op), int8(OpTwoPhaseCommit)) || op == OpAny:
		return fmt.Errorf("Invalid operation %s", op)
	case perm != Allow && perm != Deny:
		return fmt.Errorf("Invalid permissionType %s", perm)
	}
	if !strings.Contains(c.Principal, ":") {
		return fmt.Errorf("Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", c.Principal)
	}
	return nil
}
