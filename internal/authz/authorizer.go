package authz

import (
	"sync/atomic"

	"weir/internal/metadata"
)

// Authorizer decides for a broker: its Config and an index of the ACLs of
// the latest metadata image it was asked about. It is safe for
// concurrent use.
type Authorizer struct {
	cfg   Config
	cache atomic.Pointer[cachedIndex]
}

// cachedIndex is the index of one image ACL set. Sets are never
// modified, so the set's pointer says whether the index is current.
type cachedIndex struct {
	set *metadata.ACLs
	idx *Index
}

// New returns an authorizer with a config.
func New(cfg Config) *Authorizer { return &Authorizer{cfg: cfg} }

// Config is the authorizer's config.
func (a *Authorizer) Config() *Config { return &a.cfg }

// Enabled reports whether an authorizer is configured.
func (a *Authorizer) Enabled() bool { return a.cfg.Enabled }

// index returns the index of img's ACLs, building it when the image's
// set differs from the one indexed last. Two callers may both build the
// index of a new set; either result is the same.
func (a *Authorizer) index(img *metadata.Image) *Index {
	set := img.ACLs()
	if c := a.cache.Load(); c != nil && c.set == set {
		return c.idx
	}
	idx := IndexImage(set)
	a.cache.Store(&cachedIndex{set: set, idx: idx})
	return idx
}

// For returns the checker of one request: the session it comes from and
// the image it is served with.
func (a *Authorizer) For(img *metadata.Image, s Session) *Checker {
	c := &Checker{cfg: &a.cfg, s: s}
	if a.cfg.Enabled {
		c.idx = a.index(img)
	}
	return c
}

// Checker answers the authorization questions of one request. Its
// methods are pure functions of the index, the config and the session.
type Checker struct {
	idx *Index
	cfg *Config
	s   Session
}

// NewChecker returns a checker over an index, for tests and tools.
func NewChecker(idx *Index, cfg *Config, s Session) *Checker {
	return &Checker{idx: idx, cfg: cfg, s: s}
}

// Session is the checker's session.
func (c *Checker) Session() Session { return c.s }

// Enabled reports whether an authorizer is configured.
func (c *Checker) Enabled() bool { return c.cfg.Enabled }

// Decide decides one operation on one resource.
func (c *Checker) Decide(op Operation, t ResourceType, name string) Decision {
	return Decide(c.idx, c.cfg, c.s, op, t, name)
}

// Allowed reports whether op on the resource is allowed.
func (c *Checker) Allowed(op Operation, t ResourceType, name string) bool {
	return c.Decide(op, t, name).Allowed
}

// AllowedCluster reports whether op on the cluster is allowed.
func (c *Checker) AllowedCluster(op Operation) bool {
	return c.Allowed(op, ResourceCluster, ClusterName)
}

// AllowedByResourceType reports whether op is allowed on at least one
// resource of type t.
func (c *Checker) AllowedByResourceType(op Operation, t ResourceType) bool {
	return DecideByResourceType(c.idx, c.cfg, c.s, op, t)
}

// Operations is the authorized-operations bitfield of a resource.
func (c *Checker) Operations(t ResourceType, name string) int32 {
	return Operations(c.idx, c.cfg, c.s, t, name)
}
