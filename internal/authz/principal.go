package authz

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Principal is a Kafka principal: a type ("User") and a name.
type Principal struct {
	Type string
	Name string
}

// UserType is the type of every principal Kafka's authenticators make.
const UserType = "User"

// Anonymous is the principal of a PLAINTEXT or SSL connection without a
// client certificate.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// everyone is the ACL principal "User:*", which matches every principal.
var everyone = Principal{Type: UserType, Name: Wildcard}

// User returns the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String is Kafka's form, "Type:name".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ErrPrincipal: a principal string without the colon that separates its
// type from its name.
var ErrPrincipal = errors.New("authz: principal has no type")

// ParsePrincipal parses "Type:name", splitting at the first colon, as
// Kafka does.
func ParsePrincipal(s string) (Principal, error) {
	t, n, ok := strings.Cut(s, ":")
	if !ok {
		return Principal{}, fmt.Errorf("%w: %q", ErrPrincipal, s)
	}
	return Principal{Type: t, Name: n}, nil
}

// Session is who a request comes from: what the connection's
// authentication produced and the client's address, as ACL hosts name it.
type Session struct {
	Principal Principal
	Host      string
}

// Host is an address as Kafka's ACLs name a client host: Java's
// InetAddress.getHostAddress, so that ACLs written for Kafka match. IPv4
// (also when mapped into IPv6) is dotted decimal; IPv6 is eight groups of
// hexadecimal without leading zeros and without "::" compression
// ("0:0:0:0:0:0:0:1"), followed by "%zone" when there is one.
func Host(addr netip.Addr) string {
	addr = addr.Unmap()
	if !addr.Is6() {
		return addr.String()
	}
	b := addr.As16()
	var s strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s.WriteByte(':')
		}
		s.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := addr.Zone(); z != "" {
		s.WriteString("%" + z)
	}
	return s.String()
}
