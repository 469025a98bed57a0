package controller

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// brokerAt returns broker id's registration if it has the given epoch: a
// request that carries another epoch is from another incarnation, or
// stale (STALE_BROKER_EPOCH).
func (c *Controller) brokerAt(id int32, epoch int64) (*metadata.Broker, bool) {
	b, ok := c.img.Broker(id)
	return b, ok && b.Epoch == epoch
}

// validSession reports whether a broker's registration is live: it is
// unfenced and heartbeated within the session timeout.
func (c *Controller) validSession(b *metadata.Broker) bool {
	s, ok := c.sessions[b.ID]
	return ok && !b.Fenced && c.now().Sub(s.lastContact) <= c.cfg.SessionTimeout
}

// RegisterBroker handles BrokerRegistration (API 62). A broker registers
// fenced, with a new broker epoch, each time it starts (a new incarnation
// id); registering again with the same incarnation amends its endpoints
// and rack and keeps its epoch and state. Another incarnation may take
// over a broker id only once the old one's session is gone: if it was
// still unfenced, the same batch first moves its leaderships and ISR
// places away, as fencing would.
func (c *Controller) RegisterBroker(req *kmsg.BrokerRegistrationRequest) (*kmsg.BrokerRegistrationResponse, []metadata.Record) {
	resp := kmsg.NewPtrBrokerRegistrationResponse()
	resp.Version = req.Version
	fail := func(err *kerr.Error) (*kmsg.BrokerRegistrationResponse, []metadata.Record) {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	switch {
	case c.cfg.ClusterID != "" && req.ClusterID != c.cfg.ClusterID:
		return fail(kerr.InconsistentClusterID)
	case req.IsMigratingZkBroker:
		return fail(kerr.BrokerIDNotRegistered)
	case req.BrokerID < 0:
		return fail(kerr.InvalidRegistration)
	}
	old, exists := c.img.Broker(req.BrokerID)
	// The broker of the controller's own node cannot have another live
	// incarnation: that would be this very process. Its restart after a
	// crash need not wait for the old session to lapse.
	local := c.cfg.LocalBroker != nil && c.cfg.LocalBroker(req.BrokerID)
	if exists && old.Incarnation != req.IncarnationID && !local && !sameListeners(old, req) && c.validSession(old) {
		return fail(kerr.DuplicateBrokerRegistration)
	}
	rec := &metadata.RegisterBrokerRecord{ID: req.BrokerID, Incarnation: req.IncarnationID, Fenced: true}
	for _, l := range req.Listeners {
		rec.Endpoints = append(rec.Endpoints, metadata.Endpoint{Listener: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: l.SecurityProtocol})
	}
	if req.Rack != nil {
		rec.Rack = *req.Rack
	}
	t := c.begin()
	amend := exists && old.Incarnation == req.IncarnationID
	if amend {
		rec.Epoch, rec.Fenced, rec.InControlledShutdown = old.Epoch, old.Fenced, old.InControlledShutdown
	} else {
		rec.Epoch = c.img.HighestBrokerEpoch() + 1
		if exists && !old.Fenced {
			t.moveAway(old.ID)
		}
	}
	t.add(rec)
	recs, err := t.commit()
	if err != nil {
		return fail(kerr.UnknownServerError)
	}
	s := c.session(req.BrokerID)
	s.lastContact = c.now()
	if !amend {
		s.reported, s.registeredAt, s.shutdownAt = -1, -1, -1
		c.log.Info("broker registered", "node", rec.ID, "epoch", rec.Epoch, "rack", rec.Rack, "replaced", exists)
	}
	resp.BrokerEpoch = rec.Epoch
	return resp, recs
}

// Heartbeat handles BrokerHeartbeat (API 63): it renews the broker's
// session and moves it between its states, as Kafka does:
//
//   - fenced: unfenced once it reports a metadata offset at least that of
//     its registration (it has caught up), unless it wants to stay fenced;
//     leaderless partitions it can lead are then elected in the same
//     batch. Asking to shut down is granted at once.
//   - active, asking to shut down: if it leads partitions it enters
//     controlled shutdown, and one batch marks it, moves every leadership
//     it holds to another ISR member and takes it out of every ISR it is
//     in (except where it is the last member). If it leads nothing it is
//     fenced at once and may stop.
//   - in controlled shutdown: it may stop, and is fenced, once every
//     active broker has applied the batch that moved its leaderships.
//   - active or shutting down, asking to be fenced: fenced at once.
func (c *Controller) Heartbeat(req *kmsg.BrokerHeartbeatRequest) (*kmsg.BrokerHeartbeatResponse, []metadata.Record) {
	resp := kmsg.NewPtrBrokerHeartbeatResponse()
	resp.Version = req.Version
	b, ok := c.brokerAt(req.BrokerID, req.BrokerEpoch)
	if !ok {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		resp.IsFenced = true
		return resp, nil
	}
	s := c.session(b.ID)
	s.lastContact = c.now()
	s.reported = req.CurrentMetadataOffset
	if s.reported >= c.committed.Offset() {
		s.caughtUpAt = s.lastContact
	}
	caughtUp := s.registeredAt >= 0 && req.CurrentMetadataOffset >= s.registeredAt
	resp.IsCaughtUp = caughtUp
	resp.IsFenced = b.Fenced

	var recs []metadata.Record
	var err error
	switch {
	case b.Fenced:
		resp.ShouldShutdown = req.WantShutdown
		if !req.WantShutdown && !req.WantFence && caughtUp {
			recs, err = c.unfence(b)
			resp.IsFenced = err != nil
		}
	case req.WantFence:
		recs, err = c.fence(b, "asked")
		resp.IsFenced = err == nil
		resp.ShouldShutdown = req.WantShutdown && err == nil
	case b.InControlledShutdown:
		if c.shutdownComplete(s) {
			recs, err = c.fence(b, "controlled shutdown complete")
			resp.IsFenced = err == nil
			resp.ShouldShutdown = err == nil
		}
	case req.WantShutdown:
		var shutdownNow bool
		recs, shutdownNow, err = c.beginShutdown(b)
		resp.IsFenced = shutdownNow && err == nil
		resp.ShouldShutdown = shutdownNow && err == nil
	}
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
	}
	return resp, recs
}

// shutdownComplete: every active broker, the one shutting down included,
// has applied the batch that moved its leaderships.
func (c *Controller) shutdownComplete(s *session) bool {
	if s.shutdownAt < 0 {
		return false
	}
	for id, o := range c.sessions {
		if b, ok := c.img.Broker(id); ok && !b.Fenced && o.reported < s.shutdownAt {
			return false
		}
	}
	return true
}

func (c *Controller) unfence(b *metadata.Broker) ([]metadata.Record, error) {
	t := c.begin()
	t.add(&metadata.UnfenceBrokerRecord{ID: b.ID, Epoch: b.Epoch})
	t.electLeaderless(func(topic string) (election, bool) { return t.onlineElection(topic), true })
	recs, err := t.commit()
	if err == nil {
		c.log.Info("broker unfenced", "node", b.ID, "epoch", b.Epoch, "leaders_elected", len(recs)-1)
	}
	return recs, err
}

// fence writes one batch that fences b and moves it out of every
// leadership and ISR.
func (c *Controller) fence(b *metadata.Broker, reason string) ([]metadata.Record, error) {
	return c.fenceAll([]*metadata.Broker{b}, reason)
}

func (c *Controller) fenceAll(bs []*metadata.Broker, reason string) ([]metadata.Record, error) {
	t := c.begin()
	ids := make([]int32, len(bs))
	for i, b := range bs {
		ids[i] = b.ID
		t.add(&metadata.FenceBrokerRecord{ID: b.ID, Epoch: b.Epoch})
	}
	t.moveAway(ids...)
	recs, err := t.commit()
	if err == nil {
		c.log.Info("brokers fenced", "nodes", ids, "reason", reason, "partitions_changed", len(recs)-len(bs))
	}
	return recs, err
}

// beginShutdown handles an active broker's request to shut down.
func (c *Controller) beginShutdown(b *metadata.Broker) (recs []metadata.Record, shutdownNow bool, err error) {
	t := c.begin()
	t.add(&metadata.ControlledShutdownRecord{ID: b.ID, Epoch: b.Epoch})
	if !t.moveAway(b.ID) {
		// It leads nothing: no one waits for it. Fence it now, with the
		// same ISR changes.
		t = c.begin()
		t.add(&metadata.FenceBrokerRecord{ID: b.ID, Epoch: b.Epoch})
		t.moveAway(b.ID)
		shutdownNow = true
	}
	recs, err = t.commit()
	if err == nil {
		c.log.Info("broker shutting down", "node", b.ID, "epoch", b.Epoch, "now", shutdownNow, "partitions_changed", len(recs)-1)
	}
	return recs, shutdownNow, err
}

// FenceBroker fences a broker the owner knows is gone (its connection or
// raft session dropped, its process exited) without waiting for its
// session to time out: one batch fences it and moves its leaderships and
// ISR places away. epoch, if not -1, must be the registration's epoch, so
// that news of an old incarnation cannot fence a new one. It returns no
// records if the broker is unknown, already fenced, or of another epoch.
func (c *Controller) FenceBroker(id int32, epoch int64) []metadata.Record {
	b, ok := c.img.Broker(id)
	if !ok || b.Fenced || epoch != -1 && epoch != b.Epoch {
		return nil
	}
	recs, _ := c.fence(b, "lost")
	return recs
}

// sameListeners reports whether a registration names exactly the listener
// endpoints (host and port) of the registered incarnation. Only one
// process can listen on a host's port, so a new incarnation that holds
// the old one's endpoints proves the old one is gone: a restarted broker
// takes over at once instead of after the old session lapses.
func sameListeners(old *metadata.Broker, req *kmsg.BrokerRegistrationRequest) bool {
	if len(old.Endpoints) == 0 || len(old.Endpoints) != len(req.Listeners) {
		return false
	}
	for i, e := range old.Endpoints {
		l := req.Listeners[i]
		if e.Listener != l.Name || e.Host != l.Host || e.Port != l.Port || e.Host == "" || e.Port == 0 {
			return false
		}
	}
	return true
}

// UnregisterBroker handles UnregisterBroker (API 64): the broker's
// leaderships and ISR places move away and its registration goes.
func (c *Controller) UnregisterBroker(req *kmsg.UnregisterBrokerRequest) (*kmsg.UnregisterBrokerResponse, []metadata.Record) {
	resp := kmsg.NewPtrUnregisterBrokerResponse()
	resp.Version = req.Version
	b, ok := c.img.Broker(req.BrokerID)
	if !ok {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp, nil
	}
	t := c.begin()
	t.add(&metadata.UnregisterBrokerRecord{ID: b.ID, Epoch: b.Epoch})
	t.moveAway(b.ID)
	recs, err := t.commit()
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	delete(c.sessions, b.ID)
	c.log.Info("broker unregistered", "node", b.ID, "epoch", b.Epoch)
	return resp, recs
}

// AllocateProducerIDs handles AllocateProducerIds (API 67): a block of
// ProducerIDBlockSize ids that no one else will ever get.
func (c *Controller) AllocateProducerIDs(req *kmsg.AllocateProducerIDsRequest) (*kmsg.AllocateProducerIDsResponse, []metadata.Record) {
	resp := kmsg.NewPtrAllocateProducerIDsResponse()
	resp.Version = req.Version
	b, ok := c.brokerAt(req.BrokerID, req.BrokerEpoch)
	if !ok {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	start, n := c.img.NextProducerID(), c.cfg.ProducerIDBlockSize
	if start > math.MaxInt64-int64(n) {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	t := c.begin()
	t.add(&metadata.ProducerIDsRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, Next: start + int64(n)})
	recs, err := t.commit()
	if err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = start, n
	return resp, recs
}

// Progress is how far a broker follows the metadata log, as its
// heartbeats say: the offset it reported last, when, and when it last
// reported the committed offset of the time (zero times: never, since
// this controller started).
type Progress struct {
	Broker      int32
	Offset      int64
	LastContact time.Time
	CaughtUp    time.Time
}

// Progress lists every registered broker's progress, by id.
func (c *Controller) Progress() []Progress {
	var out []Progress
	for _, b := range c.committed.Brokers() {
		p := Progress{Broker: b.ID, Offset: -1}
		if s, ok := c.sessions[b.ID]; ok && s.reported >= 0 {
			p.Offset, p.LastContact, p.CaughtUp = s.reported, s.lastContact, s.caughtUpAt
		}
		out = append(out, p)
	}
	return out
}
