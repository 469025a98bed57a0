package metadata

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
)

// ACL is an ACL as the image holds it: the fields of the record that
// added it. Never modify one.
type ACL AccessControlEntryRecord

// ACLs is an image's set of ACLs. A set is never modified: a batch that
// adds or removes ACLs builds a new one, so a reader may keep what it
// derives from a set (an authorizer's index) under the set's pointer for
// as long as the image hands out the same pointer.
type ACLs struct {
	byID    map[[16]byte]*ACL
	content map[aclContent][16]byte
}

// aclContent is an ACL without its id: two ACLs never share it.
type aclContent struct {
	resourceType   int8
	resourceName   string
	patternType    int8
	principal      string
	host           string
	operation      int8
	permissionType int8
}

func contentOf(a *ACL) aclContent {
	return aclContent{a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.PermissionType}
}

// emptyACLs is the set of an image without ACLs.
var emptyACLs = &ACLs{}

// Len is the number of ACLs.
func (s *ACLs) Len() int { return len(s.byID) }

// Get returns the ACL of an id.
func (s *ACLs) Get(id [16]byte) (*ACL, bool) {
	a, ok := s.byID[id]
	return a, ok
}

// Find returns the id of the ACL with the same fields as a (its own id
// aside), if the set holds one.
func (s *ACLs) Find(a *ACL) ([16]byte, bool) {
	id, ok := s.content[contentOf(a)]
	return id, ok
}

// All returns every ACL, by id.
func (s *ACLs) All() []*ACL {
	out := slices.Collect(maps.Values(s.byID))
	slices.SortFunc(out, func(a, b *ACL) int { return slices.Compare(a.ID[:], b.ID[:]) })
	return out
}

func (s *ACLs) clone() *ACLs {
	c := &ACLs{byID: maps.Clone(s.byID), content: maps.Clone(s.content)}
	if c.byID == nil {
		c.byID = make(map[[16]byte]*ACL)
		c.content = make(map[aclContent][16]byte)
	}
	return c
}

// ScramCredential is a user's SCRAM credential for one mechanism: what a
// SCRAM server needs to check a client's proof (RFC 5802). The slices are
// part of an image: never modify them.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

type scramKey struct {
	user      string
	mechanism int8
}

// scramKeySize is the length of the stored and server keys of a
// mechanism: its hash's output size, 0 for an unknown mechanism.
func scramKeySize(m int8) int {
	switch m {
	case ScramSHA256:
		return 32
	case ScramSHA512:
		return 64
	}
	return 0
}

// ClientQuotas is an image's set of client quotas: per entity, quota
// keys (producer_byte_rate, ...) and their values. Like ACLs, a set is
// never modified, and a reader may key what it derives on its pointer.
type ClientQuotas struct {
	m map[QuotaEntity]map[string]float64 // inner maps replaced, never modified
}

var emptyQuotas = &ClientQuotas{}

// Len is the number of entities with at least one quota.
func (q *ClientQuotas) Len() int { return len(q.m) }

// Get returns an entity's quotas. The map is part of the image: never
// modify it.
func (q *ClientQuotas) Get(e QuotaEntity) map[string]float64 { return q.m[e] }

// Value returns one quota of an entity.
func (q *ClientQuotas) Value(e QuotaEntity, key string) (float64, bool) {
	v, ok := q.m[e][key]
	return v, ok
}

// Entities returns every entity with quotas, in CompareQuotaEntities
// order.
func (q *ClientQuotas) Entities() []QuotaEntity {
	return slices.SortedFunc(maps.Keys(q.m), CompareQuotaEntities)
}

// CompareQuotaEntities orders entities by user, then client id, then ip;
// an absent part first, then the default, then names in byte order.
func CompareQuotaEntities(a, b QuotaEntity) int {
	name := func(x, y QuotaName) int {
		rank := func(n QuotaName) int {
			switch {
			case !n.Present:
				return 0
			case n.Default:
				return 1
			}
			return 2
		}
		return cmp.Or(cmp.Compare(rank(x), rank(y)), strings.Compare(x.Name, y.Name))
	}
	return cmp.Or(name(a.User, b.User), name(a.ClientID, b.ClientID), name(a.IP, b.IP))
}

// ValidQuotaEntity reports whether e is an entity Kafka keeps quotas
// for: a user, a client id, or both; or an IP address alone. A named part
// has a non-empty name.
func ValidQuotaEntity(e QuotaEntity) bool {
	for _, n := range [...]QuotaName{e.User, e.ClientID, e.IP} {
		if n.Present && !n.Default && n.Name == "" || !n.Present && (n.Default || n.Name != "") || n.Default && n.Name != "" {
			return false
		}
	}
	if e.IP.Present {
		return !e.User.Present && !e.ClientID.Present
	}
	return e.User.Present || e.ClientID.Present
}

// ACLs returns the image's ACLs (never nil).
func (img *Image) ACLs() *ACLs {
	if img.acls == nil {
		return emptyACLs
	}
	return img.acls
}

// ScramCredential returns a user's credential for a mechanism
// (ScramSHA256, ScramSHA512).
func (img *Image) ScramCredential(user string, mechanism int8) (ScramCredential, bool) {
	c, ok := img.scram[scramKey{user, mechanism}]
	if !ok {
		return ScramCredential{}, false
	}
	return *c, true
}

// EachScramCredential calls fn for every credential, by user and then
// mechanism, until fn returns false.
func (img *Image) EachScramCredential(fn func(user string, mechanism int8, c ScramCredential) bool) {
	keys := slices.SortedFunc(maps.Keys(img.scram), func(a, b scramKey) int {
		return cmp.Or(strings.Compare(a.user, b.user), cmp.Compare(a.mechanism, b.mechanism))
	})
	for _, k := range keys {
		if !fn(k.user, k.mechanism, *img.scram[k]) {
			return
		}
	}
}

// ClientQuotas returns the image's client quotas (never nil).
func (img *Image) ClientQuotas() *ClientQuotas {
	if img.quotas == nil {
		return emptyQuotas
	}
	return img.quotas
}

func (b *Builder) aclsForWrite() *ACLs {
	if !b.aclsOwned {
		b.img.acls = b.img.ACLs().clone()
		b.aclsOwned = true
	}
	return b.img.acls
}

func (b *Builder) addACL(r *AccessControlEntryRecord) error {
	switch {
	case r.ID == [16]byte{}:
		return invalidf("acl with the zero id")
	case r.ResourceType < 2 || r.ResourceType > 7:
		return invalidf("acl %s: resource type %d", TopicID(r.ID), r.ResourceType)
	case r.PatternType != 3 && r.PatternType != 4:
		return invalidf("acl %s: pattern type %d", TopicID(r.ID), r.PatternType)
	case r.Operation < 2 || r.Operation > 15:
		return invalidf("acl %s: operation %d", TopicID(r.ID), r.Operation)
	case r.PermissionType != 2 && r.PermissionType != 3:
		return invalidf("acl %s: permission type %d", TopicID(r.ID), r.PermissionType)
	case r.ResourceName == "":
		return invalidf("acl %s: empty resource name", TopicID(r.ID))
	case !strings.Contains(r.Principal, ":"):
		return invalidf("acl %s: principal %q has no type", TopicID(r.ID), r.Principal)
	}
	a := ACL(*r)
	cur := b.img.ACLs()
	if _, dup := cur.byID[a.ID]; dup {
		return invalidf("acl id %s exists", TopicID(a.ID))
	}
	if id, dup := cur.content[contentOf(&a)]; dup {
		return invalidf("acl %s repeats acl %s", TopicID(a.ID), TopicID(id))
	}
	s := b.aclsForWrite()
	s.byID[a.ID] = &a
	s.content[contentOf(&a)] = a.ID
	if b.t != nil {
		b.t.acls = true
	}
	return nil
}

func (b *Builder) removeACL(r *RemoveAccessControlEntryRecord) error {
	a, ok := b.img.ACLs().byID[r.ID]
	if !ok {
		return invalidf("remove unknown acl %s", TopicID(r.ID))
	}
	s := b.aclsForWrite()
	delete(s.byID, r.ID)
	delete(s.content, contentOf(a))
	if b.t != nil {
		b.t.acls = true
	}
	return nil
}

func (b *Builder) setScram(k scramKey, c *ScramCredential) {
	if !b.scramOwned {
		b.img.scram = maps.Clone(b.img.scram)
		if b.img.scram == nil {
			b.img.scram = make(map[scramKey]*ScramCredential)
		}
		b.scramOwned = true
	}
	if c == nil {
		delete(b.img.scram, k)
	} else {
		b.img.scram[k] = c
	}
	if b.t != nil {
		b.t.scram = true
	}
}

func (b *Builder) scramCredential(r *UserScramCredentialRecord) error {
	size := scramKeySize(r.Mechanism)
	switch {
	case r.Name == "":
		return invalidf("scram credential of an empty user name")
	case size == 0:
		return invalidf("scram credential of %q: mechanism %d", r.Name, r.Mechanism)
	case r.Iterations < ScramMinIterations || r.Iterations > ScramMaxIterations:
		return invalidf("scram credential of %q: %d iterations", r.Name, r.Iterations)
	case len(r.StoredKey) != size || len(r.ServerKey) != size:
		return invalidf("scram credential of %q: keys of %d and %d bytes, not %d", r.Name, len(r.StoredKey), len(r.ServerKey), size)
	}
	b.setScram(scramKey{r.Name, r.Mechanism}, &ScramCredential{
		Salt: slices.Clone(r.Salt), StoredKey: slices.Clone(r.StoredKey), ServerKey: slices.Clone(r.ServerKey), Iterations: r.Iterations,
	})
	return nil
}

func (b *Builder) removeScram(r *RemoveUserScramCredentialRecord) error {
	k := scramKey{r.Name, r.Mechanism}
	if _, ok := b.img.scram[k]; !ok {
		return invalidf("remove unknown scram credential of %q, mechanism %d", r.Name, r.Mechanism)
	}
	b.setScram(k, nil)
	return nil
}

func (b *Builder) clientQuota(r *ClientQuotaRecord) error {
	switch {
	case !ValidQuotaEntity(r.Entity):
		return invalidf("client quota of entity %+v", r.Entity)
	case r.Key == "":
		return invalidf("client quota of %s with an empty key", r.Entity)
	case !r.Remove && (r.Value <= 0 || math.IsInf(r.Value, 0) || math.IsNaN(r.Value)):
		return invalidf("client quota %s of %s: value %v", r.Key, r.Entity, r.Value)
	}
	cur := b.img.ClientQuotas().m[r.Entity]
	if v, ok := cur[r.Key]; r.Remove && !ok || !r.Remove && ok && v == r.Value {
		return nil
	}
	if !b.quotasOwned {
		b.img.quotas = &ClientQuotas{m: maps.Clone(b.img.ClientQuotas().m)}
		if b.img.quotas.m == nil {
			b.img.quotas.m = make(map[QuotaEntity]map[string]float64)
		}
		b.quotasOwned = true
	}
	next := maps.Clone(cur)
	if next == nil {
		next = make(map[string]float64, 1)
	}
	if r.Remove {
		delete(next, r.Key)
	} else {
		next[r.Key] = r.Value
	}
	if len(next) == 0 {
		delete(b.img.quotas.m, r.Entity)
	} else {
		b.img.quotas.m[r.Entity] = next
	}
	if b.t != nil {
		b.t.quota(r.Entity)
	}
	return nil
}

// securityRecords calls fn with the records that rebuild img's ACLs,
// SCRAM credentials and client quotas, in snapshot order.
func (img *Image) securityRecords(fn func(Record) error) error {
	for _, a := range img.ACLs().All() {
		r := AccessControlEntryRecord(*a)
		if err := fn(&r); err != nil {
			return err
		}
	}
	var err error
	img.EachScramCredential(func(user string, m int8, c ScramCredential) bool {
		err = fn(&UserScramCredentialRecord{Name: user, Mechanism: m, Salt: slices.Clone(c.Salt),
			StoredKey: slices.Clone(c.StoredKey), ServerKey: slices.Clone(c.ServerKey), Iterations: c.Iterations})
		return err == nil
	})
	if err != nil {
		return err
	}
	q := img.ClientQuotas()
	for _, e := range q.Entities() {
		m := q.m[e]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if err := fn(&ClientQuotaRecord{Entity: e, Key: k, Value: m[k]}); err != nil {
				return err
			}
		}
	}
	return nil
}

// numSecurityRecords is how many records securityRecords yields.
func (img *Image) numSecurityRecords() int {
	n := img.ACLs().Len() + len(img.scram)
	for _, m := range img.ClientQuotas().m {
		n += len(m)
	}
	return n
}

// securityEqual reports whether two images hold the same ACLs, SCRAM
// credentials and client quotas.
func (img *Image) securityEqual(o *Image) bool {
	a, oa := img.ACLs(), o.ACLs()
	if a.Len() != oa.Len() || len(img.scram) != len(o.scram) || !maps.EqualFunc(img.ClientQuotas().m, o.ClientQuotas().m, maps.Equal) {
		return false
	}
	for id, x := range a.byID {
		y, ok := oa.byID[id]
		if !ok || *x != *y {
			return false
		}
	}
	for k, x := range img.scram {
		y, ok := o.scram[k]
		if !ok || x.Iterations != y.Iterations || !slices.Equal(x.Salt, y.Salt) ||
			!slices.Equal(x.StoredKey, y.StoredKey) || !slices.Equal(x.ServerKey, y.ServerKey) {
			return false
		}
	}
	return true
}
