package quota

import (
	"weir/internal/metadata"
)

// Kind is a kind of client quota.
type Kind uint8

// The quota kinds a broker enforces on clients.
const (
	// Produce is producer_byte_rate: bytes of produce requests per second.
	Produce Kind = iota
	// Fetch is consumer_byte_rate: bytes of fetch responses per second.
	Fetch
	// Request is request_percentage: the time the broker spends on a
	// client's requests, as a percentage of one thread.
	Request
	numKinds
)

var kindKeys = [numKinds]string{ProducerByteRate, ConsumerByteRate, RequestPercentage}

var kindNames = [numKinds]string{"Produce", "Fetch", "Request"}

func (k Kind) String() string { return kindNames[k] }

// Key is the quota key of the kind.
func (k Kind) Key() string { return kindKeys[k] }

// Client is who a quota applies to: the authenticated user (the
// principal's name) and the client id of the request header.
type Client struct {
	User     string
	ClientID string
}

// sensorKey names the rate a client's records go to (Kafka's quota
// metric tags): a user, a client id, or both; "" for a part left out.
// Clients that share a quota share the rate: all client ids of a user
// with a user quota, all users of a client id with a client-id quota.
type sensorKey struct {
	kind     Kind
	user     string
	clientID string
}

// limits resolves quotas of one image's set for one kind, as Kafka's
// default quota callback does.
type limits struct {
	q *metadata.ClientQuotas
	// which entity shapes hold a quota of each kind: Kafka's
	// quotaTypesEnabled, which decides how clients share rates.
	userQuotas, clientQuotas, userClientQuotas [numKinds]bool
}

func newLimits(q *metadata.ClientQuotas) *limits {
	l := &limits{q: q}
	for _, e := range q.Entities() {
		if e.IP.Present {
			continue
		}
		for k := range numKinds {
			if _, ok := q.Value(e, k.Key()); !ok {
				continue
			}
			switch {
			case e.User.Present && e.ClientID.Present:
				l.userClientQuotas[k] = true
			case e.User.Present:
				l.userQuotas[k] = true
			default:
				l.clientQuotas[k] = true
			}
		}
	}
	return l
}

// enabled reports whether any client has a quota of kind k.
func (l *limits) enabled(k Kind) bool {
	return l.userQuotas[k] || l.clientQuotas[k] || l.userClientQuotas[k]
}

func (l *limits) has(e metadata.QuotaEntity, k Kind) bool {
	_, ok := l.q.Value(e, k.Key())
	return ok
}

// key is the rate a client's records of kind k go to (Kafka's quota
// metric tags). With quotas of one entity shape only, clients are keyed
// by that shape; with several, by the most specific entity that has a
// quota for the client, in Kafka's order of precedence:
//
//  1. user and client id      2. user and default client id
//  3. user                    4. default user and client id
//  5. default user and default client id
//  6. default user            7. client id        8. default client id
func (l *limits) key(k Kind, c Client) sensorKey {
	user := sensorKey{kind: k, user: c.User}
	client := sensorKey{kind: k, clientID: c.ClientID}
	both := sensorKey{kind: k, user: c.User, clientID: c.ClientID}
	u, d, id := metadata.Named(c.User), metadata.DefaultName, metadata.Named(c.ClientID)
	switch {
	case !l.enabled(k) || l.clientQuotas[k] && !l.userQuotas[k] && !l.userClientQuotas[k]:
		return client
	case l.userQuotas[k] && !l.clientQuotas[k] && !l.userClientQuotas[k]:
		return user
	case l.userClientQuotas[k] && !l.userQuotas[k] && !l.clientQuotas[k]:
		return both
	case l.has(metadata.QuotaEntity{User: u, ClientID: id}, k), l.has(metadata.QuotaEntity{User: u, ClientID: d}, k):
		return both
	case l.has(metadata.QuotaEntity{User: u}, k):
		return user
	case l.has(metadata.QuotaEntity{User: d, ClientID: id}, k), l.has(metadata.QuotaEntity{User: d, ClientID: d}, k):
		return both
	case l.has(metadata.QuotaEntity{User: d}, k):
		return user
	}
	return client
}

// limit is the quota of a rate, and whether it has one.
func (l *limits) limit(s sensorKey) (float64, bool) {
	u, d, id := metadata.Named(s.user), metadata.DefaultName, metadata.Named(s.clientID)
	var order []metadata.QuotaEntity
	switch {
	case s.user != "" && s.clientID != "":
		order = []metadata.QuotaEntity{{User: u, ClientID: id}, {User: u, ClientID: d}, {User: d, ClientID: id}, {User: d, ClientID: d}}
	case s.user != "":
		order = []metadata.QuotaEntity{{User: u}, {User: d}}
	case s.clientID != "":
		order = []metadata.QuotaEntity{{ClientID: id}, {ClientID: d}}
	}
	for _, e := range order {
		if v, ok := l.q.Value(e, s.kind.Key()); ok {
			return v, true
		}
	}
	return 0, false
}
