package authz

import (
	"fmt"
	"strings"
)

// ResourceType is Kafka's ACL resource type, with its wire codes.
type ResourceType int8

// The resource types. Unknown and Any appear only in filters.
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"

// Wildcard is the resource name of a LITERAL pattern that matches every
// resource of its type, the host of an ACL that matches every host, and
// the name of the principal "User:*" that matches every principal.
const Wildcard = "*"

var resourceNames = [...]string{"UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"}

func (t ResourceType) String() string { return codeName(resourceNames[:], int8(t)) }

// Concrete reports whether t names resources (not UNKNOWN or ANY).
func (t ResourceType) Concrete() bool { return t >= ResourceTopic && t <= ResourceUser }

// PatternType says how an ACL's resource name matches resources.
type PatternType int8

// The pattern types. Unknown, Any and Match appear only in filters: Any
// matches any pattern type by name, Match the patterns that would apply
// to a resource of the filter's name.
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

var patternNames = [...]string{"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"}

func (p PatternType) String() string { return codeName(patternNames[:], int8(p)) }

// Operation is an operation on a resource.
type Operation int8

// The operations. Unknown and Any appear only in filters; an ACL for All
// allows or denies every operation.
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

var opNames = [...]string{"UNKNOWN", "ANY", "ALL", "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE",
	"CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS", "DESCRIBE_TOKENS", "TWO_PHASE_COMMIT"}

func (o Operation) String() string { return codeName(opNames[:], int8(o)) }

// Permission is an ACL's permission type.
type Permission int8

// The permission types. Unknown and Any appear only in filters.
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	Deny              Permission = 2
	Allow             Permission = 3
)

var permissionNames = [...]string{"UNKNOWN", "ANY", "DENY", "ALLOW"}

func (p Permission) String() string { return codeName(permissionNames[:], int8(p)) }

// codeName is Kafka's name of a code; codes it does not know are UNKNOWN,
// as Kafka's fromCode makes them.
func codeName(names []string, code int8) string {
	if code < 0 || int(code) >= len(names) {
		return names[0]
	}
	return names[code]
}

// parseCode finds a code by Kafka's name, in any case, with '-' for '_'
// ("transactional-id" as kafka-acls spells it).
func parseCode(names []string, what, s string) (int8, error) {
	n := strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	for i, name := range names {
		if name == n {
			return int8(i), nil
		}
	}
	return 0, fmt.Errorf("authz: unknown %s %q", what, s)
}

// ParseResourceType parses a resource type's name.
func ParseResourceType(s string) (ResourceType, error) {
	c, err := parseCode(resourceNames[:], "resource type", s)
	return ResourceType(c), err
}

// ParsePatternType parses a pattern type's name.
func ParsePatternType(s string) (PatternType, error) {
	c, err := parseCode(patternNames[:], "pattern type", s)
	return PatternType(c), err
}

// ParseOperation parses an operation's name.
func ParseOperation(s string) (Operation, error) {
	c, err := parseCode(opNames[:], "operation", s)
	return Operation(c), err
}

// ParsePermission parses a permission type's name.
func ParsePermission(s string) (Permission, error) {
	c, err := parseCode(permissionNames[:], "permission type", s)
	return Permission(c), err
}

// SupportedOperations are the operations an ACL of a resource type can
// grant, as Kafka lists them for authorized-operations bitfields, in code
// order. Nil for a type that is not concrete.
func SupportedOperations(t ResourceType) []Operation {
	switch t {
	case ResourceTopic:
		return []Operation{OpRead, OpWrite, OpCreate, OpDelete, OpAlter, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	case ResourceGroup:
		return []Operation{OpRead, OpDelete, OpDescribe, OpDescribeConfigs, OpAlterConfigs}
	case ResourceCluster:
		return []Operation{OpCreate, OpAlter, OpDescribe, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite}
	case ResourceTransactionalID:
		return []Operation{OpWrite, OpDescribe, OpTwoPhaseCommit}
	case ResourceDelegationToken:
		return []Operation{OpDescribe}
	case ResourceUser:
		return []Operation{OpCreateTokens, OpDescribeTokens}
	}
	return nil
}

// AuthorizedOperationsOmitted is the value of an authorized-operations
// field the client did not ask for (Kafka's Integer.MIN_VALUE).
const AuthorizedOperationsOmitted int32 = -1 << 31

// OperationBits is Kafka's bitfield of operations: bit n set for the
// operation of code n.
func OperationBits(ops ...Operation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}
