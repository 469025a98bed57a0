package quota

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// Quota keys, with Kafka's names.
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// keyType is the config type Kafka gives a quota key: it decides which
// values are valid.
type keyType uint8

const (
	typeLong keyType = iota
	typeDouble
	typeInt
)

// clientKeys are the keys of user and client-id entities, ipKeys those
// of IP entities.
var (
	clientKeys = map[string]keyType{ProducerByteRate: typeLong, ConsumerByteRate: typeLong, RequestPercentage: typeDouble, ControllerMutationRate: typeDouble}
	ipKeys     = map[string]keyType{ConnectionCreationRate: typeInt}
)

// Error is a Kafka error code with Kafka's message, the answer for one
// entity or one request.
type Error struct {
	Code    *kerr.Error
	Message string
}

func (e *Error) Error() string { return e.Code.Message + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Code }

func invalid(format string, args ...any) *Error {
	return &Error{Code: kerr.InvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// EntityPart is one (type, name) pair of an entity as requests carry it;
// a nil name is the <default>.
type EntityPart struct {
	Type string
	Name *string
}

// ParseEntity turns an entity's parts into a QuotaEntity, with Kafka's
// checks and messages (all INVALID_REQUEST): not empty, each type
// "user", "client-id" or "ip" at most once, names not empty, an IP alone
// and an address. Kafka also accepts host names it can resolve as IP
// entities; resolving is I/O, so only IP literals are accepted here.
func ParseEntity(parts []EntityPart) (metadata.QuotaEntity, *Error) {
	var e metadata.QuotaEntity
	if len(parts) == 0 {
		return e, invalid("Invalid empty client quota entity")
	}
	for _, p := range parts {
		var dst *metadata.QuotaName
		switch p.Type {
		case metadata.QuotaUser:
			dst = &e.User
		case metadata.QuotaClientID:
			dst = &e.ClientID
		case metadata.QuotaIP:
			dst = &e.IP
		default:
			return e, invalid("Unhandled client quota entity type: %s", p.Type)
		}
		if dst.Present {
			return e, invalid("Invalid client quota entity, duplicate entity entry %s", p.Type)
		}
		switch {
		case p.Name == nil:
			*dst = metadata.DefaultName
		case *p.Name == "":
			return e, invalid("Empty %s not supported", p.Type)
		default:
			*dst = metadata.Named(*p.Name)
		}
	}
	if e.IP.Present {
		if e.User.Present || e.ClientID.Present {
			// Kafka's message, missing space included.
			return e, invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
		}
		if !e.IP.Default {
			if _, err := netip.ParseAddr(e.IP.Name); err != nil {
				return e, invalid("%s is not a valid IP or resolvable host.", e.IP.Name)
			}
		}
	}
	return e, nil
}

// EntityParts is the inverse of ParseEntity: the parts in the order
// user, client-id, ip.
func EntityParts(e metadata.QuotaEntity) []EntityPart {
	var parts []EntityPart
	e.Parts(func(t string, n metadata.QuotaName) {
		p := EntityPart{Type: t}
		if !n.Default {
			name := n.Name
			p.Name = &name
		}
		parts = append(parts, p)
	})
	return parts
}

// ValidateValue checks one quota value of an entity as Kafka does: a key
// of the entity's kind (user and client-id quotas, or connection rates
// of IPs), greater than 0, and whole for integral keys.
func ValidateValue(e metadata.QuotaEntity, key string, v float64) *Error {
	keys := clientKeys
	if e.IP.Present {
		keys = ipKeys
	}
	t, ok := keys[key]
	switch {
	case !ok:
		return invalid("Invalid configuration key %s", key)
	case !(v > 0): // NaN too
		return invalid("Quota %s must be greater than 0", key)
	case t == typeInt && v > math.MaxInt32:
		return invalid("Proposed value for %s is too large for an INT.", key)
	case t == typeLong && v >= math.MaxInt64:
		return invalid("Proposed value for %s is too large for a LONG.", key)
	case t != typeDouble && math.Abs(math.Mod(v, 1)) > 1e-6:
		return invalid("%s cannot be a fractional value.", key)
	case math.IsInf(v, 0):
		return invalid("Quota %s must be finite", key)
	}
	return nil
}

// Alteration is one entry of an AlterClientQuotas request, parsed.
type Alteration struct {
	Entity metadata.QuotaEntity
	// Set are the values to set, Remove the keys to remove.
	Set    map[string]float64
	Remove []string
}

// ParseAlteration parses and validates one entry against the entity's
// current quotas, as Kafka's controller does: a key named twice is an
// error for the entity, and so is any invalid value (the entity then
// changes nothing).
func ParseAlteration(entry *kmsg.AlterClientQuotasRequestEntry) (Alteration, *Error) {
	parts := make([]EntityPart, len(entry.Entity))
	for i, p := range entry.Entity {
		parts[i] = EntityPart{Type: p.Type, Name: p.Name}
	}
	e, err := ParseEntity(parts)
	a := Alteration{Entity: e, Set: map[string]float64{}}
	seen := map[string]bool{}
	for _, op := range entry.Ops {
		if seen[op.Key] {
			return a, invalid("Duplicate quota key %s not updating quota for this entity %s", op.Key, partsString(parts))
		}
		seen[op.Key] = true
	}
	if err != nil {
		return a, err
	}
	for _, op := range entry.Ops {
		if op.Remove {
			a.Remove = append(a.Remove, op.Key)
			continue
		}
		if err := ValidateValue(e, op.Key, op.Value); err != nil {
			return a, err
		}
		a.Set[op.Key] = op.Value
	}
	return a, nil
}

// Records returns the records that apply an alteration to an entity
// whose quotas are current: only changed values, and removals of keys
// that are set.
func (a *Alteration) Records(current map[string]float64) []metadata.Record {
	var recs []metadata.Record
	for _, k := range slices.Sorted(maps.Keys(a.Set)) {
		if v, ok := current[k]; !ok || v != a.Set[k] {
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: a.Entity, Key: k, Value: a.Set[k]})
		}
	}
	for _, k := range a.Remove {
		if _, ok := current[k]; ok {
			recs = append(recs, &metadata.ClientQuotaRecord{Entity: a.Entity, Key: k, Remove: true})
		}
	}
	return recs
}

// EntityString formats an entity as Kafka's ClientQuotaEntity does in
// messages.
func EntityString(e metadata.QuotaEntity) string { return partsString(EntityParts(e)) }

func partsString(parts []EntityPart) string {
	s := "ClientQuotaEntity(entries={"
	for i, p := range parts {
		if i > 0 {
			s += ", "
		}
		name := "null"
		if p.Name != nil {
			name = *p.Name
		}
		s += p.Type + "=" + name
	}
	return s + "})"
}

// ErrUnsupportedEntityType: a DescribeClientQuotas filter on an entity
// type Kafka does not know (UNSUPPORTED_VERSION, as Kafka answers).
var ErrUnsupportedEntityType = errors.New("quota: unsupported entity type")

// Describe answers DescribeClientQuotas from an image's quotas, as
// Kafka's broker does: each component filters one entity type by exact
// name (a null name is the <default>), by the default, or by having the
// type at all; strict keeps only entities with no other types. A bad
// filter is the request's error: INVALID_REQUEST, or
// UNSUPPORTED_VERSION for an unknown entity type.
func Describe(q *metadata.ClientQuotas, req *kmsg.DescribeClientQuotasRequest) *kmsg.DescribeClientQuotasResponse {
	resp := kmsg.NewPtrDescribeClientQuotasResponse()
	resp.Version = req.Version
	exact := map[string]metadata.QuotaName{}
	typed := map[string]bool{}
	fail := func(err *Error) *kmsg.DescribeClientQuotasResponse {
		resp.ErrorCode, resp.ErrorMessage = err.Code.Code, &err.Message
		return resp
	}
	for _, c := range req.Components {
		switch _, dup := exact[c.EntityType]; {
		case c.EntityType == "":
			return fail(invalid("Invalid empty entity type."))
		case dup || typed[c.EntityType]:
			return fail(invalid("Entity type %s cannot appear more than once in the filter.", c.EntityType))
		case c.EntityType != metadata.QuotaUser && c.EntityType != metadata.QuotaClientID && c.EntityType != metadata.QuotaIP:
			return fail(&Error{Code: kerr.UnsupportedVersion, Message: "Unsupported entity type " + c.EntityType})
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return fail(invalid("Request specified MATCH_TYPE_EXACT, but set match string to null."))
			}
			exact[c.EntityType] = metadata.Named(*c.Match)
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return fail(invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string."))
			}
			exact[c.EntityType] = metadata.DefaultName
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return fail(invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."))
			}
			typed[c.EntityType] = true
		default:
			return fail(invalid("Unknown match type %d", c.MatchType))
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || typed[t] }
	if has(metadata.QuotaIP) && (has(metadata.QuotaUser) || has(metadata.QuotaClientID)) {
		return fail(invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."))
	}
	// Entries is nullable: null only with an error (the Java client
	// reads null as a failure).
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range q.Entities() {
		if !describeMatches(e, exact, typed, req.Strict) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range EntityParts(e) {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.Type, p.Name
			entry.Entity = append(entry.Entity, ee)
		}
		values := q.Get(e)
		for _, k := range slices.Sorted(maps.Keys(values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp
}

func describeMatches(e metadata.QuotaEntity, exact map[string]metadata.QuotaName, typed map[string]bool, strict bool) bool {
	parts := map[string]metadata.QuotaName{}
	e.Parts(func(t string, n metadata.QuotaName) { parts[t] = n })
	if strict && len(parts) != len(exact)+len(typed) {
		return false
	}
	for t, want := range exact {
		if got, ok := parts[t]; !ok || got != want {
			return false
		}
	}
	for t := range typed {
		if _, ok := parts[t]; !ok {
			return false
		}
	}
	return true
}
