package authz

import (
	"fmt"
	"strings"
)

// Broker configs of the authorizer, with Kafka's names.
const (
	ClassNameConfig            = "authorizer.class.name"
	SuperUsersConfig           = "super.users"
	AllowEveryoneIfNoACLConfig = "allow.everyone.if.no.acl.found"
)

// StandardAuthorizerClass is the authorizer.class.name of Kafka's KRaft
// authorizer, the one weir implements.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// Config is how the authorizer decides.
type Config struct {
	// Enabled: authorizer.class.name names the StandardAuthorizer. Off,
	// every request is allowed, as in Kafka without an authorizer, and
	// the ACL admin APIs answer SECURITY_DISABLED.
	Enabled bool
	// SuperUsers are principals ("User:admin") allowed everything,
	// whatever the ACLs say.
	SuperUsers map[Principal]bool
	// AllowEveryoneIfNoACL allows an operation on a resource that no ACL
	// names at all (for any principal). Off (the default), such
	// operations are denied: deny by default.
	AllowEveryoneIfNoACL bool
}

// ParseConfig reads the authorizer's broker configs; get returns a
// config's value and whether it is set. An authorizer.class.name other
// than Kafka's StandardAuthorizer, a super user that is not "Type:name"
// and a boolean that is neither true nor false are errors.
func ParseConfig(get func(name string) (string, bool)) (Config, error) {
	var cfg Config
	if class, ok := get(ClassNameConfig); ok {
		switch strings.TrimSpace(class) {
		case "":
		case StandardAuthorizerClass:
			cfg.Enabled = true
		default:
			return Config{}, fmt.Errorf("authz: %s=%s: only %s is supported", ClassNameConfig, class, StandardAuthorizerClass)
		}
	}
	if users, ok := get(SuperUsersConfig); ok {
		for _, u := range strings.Split(users, ";") {
			if u = strings.TrimSpace(u); u == "" {
				continue
			}
			p, err := ParsePrincipal(u)
			if err != nil {
				return Config{}, fmt.Errorf("authz: %s: %w", SuperUsersConfig, err)
			}
			if cfg.SuperUsers == nil {
				cfg.SuperUsers = make(map[Principal]bool)
			}
			cfg.SuperUsers[p] = true
		}
	}
	if v, ok := get(AllowEveryoneIfNoACLConfig); ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			cfg.AllowEveryoneIfNoACL = true
		case "false", "":
		default:
			return Config{}, fmt.Errorf("authz: %s=%s is not a boolean", AllowEveryoneIfNoACLConfig, v)
		}
	}
	return cfg, nil
}
