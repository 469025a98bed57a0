package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/records"
	"weir/internal/wiretag"
)

// A share consumer (KIP-932) is a member of a share group: the group's
// coordinator assigns partitions through ShareGroupHeartbeat, possibly the
// same partition to several members, and each partition's leader hands out
// records under acquisition locks through ShareFetch. The member
// acknowledges each record (accept, release, reject), piggy-backed on its
// next ShareFetch to that leader or sent with ShareAcknowledge. Each leader
// keeps one share session per member; its epoch (ShareSessionEpoch) starts
// at 0, counts up with every request and -1 closes it.
//
// # Fetch policy
//
// A Poll runs one round of ShareFetch requests, at most one per leader of
// the assigned partitions, sent together; it waits for all of them. Which
// leaders are asked, for how many records (MaxRecords) and how long they
// may wait (MaxWaitMs) is planShareFetches, a pure function with its own
// tests:
//
//   - batch_optimized: every leader, each for max.poll.records, a soft
//     cap, as Kafka does; records beyond max.poll.records wait in the
//     consumer for the next Poll, still locked.
//   - record_limit, a strict cap, with backlog hints (the default, from
//     weir brokers: wiretag.ShareFetchBacklog says how many records wait
//     for the member on each leader): a round goes to the leader with the
//     most waiting, with the whole cap less the probes below, and stays
//     with it while it has records and no other leader has more than
//     shareSwitchFactor times as many (heaviest). Without hints (another
//     broker, or weir.share.fetch.backlog.hints=false) a leader whose
//     last fetch acquired records is hot. While any leader is hot, a round goes to one hot
//     leader, the target, with the whole cap: the leader that just
//     returned records is asked again at once, for up to shareStickRounds
//     rounds, then the next hot leader takes over (so that a long backlog
//     on one leader does not starve another). An empty leader not asked
//     for shareProbeEvery gets a probe of one record in the same round,
//     taken off the target's share, so that records arriving there are
//     found without a wait. When no leader is hot, every leader is asked,
//     the cap split evenly (leaders beyond the cap wait for a later round;
//     the starting leader rotates).
//   - Waiting: a round waits up to fetch.max.wait.ms only when the round
//     before asked every leader and got nothing; otherwise MaxWaitMs is 0.
//     A leader with nothing never holds a Poll while another has records;
//     an idle consumer long-polls after at most two empty 0-wait rounds
//     (the target alone, then every leader).
//
// With record_limit the acknowledgements of the previous Poll for a
// leader this round does not fetch from go first, alone
// (ShareAcknowledge), and the fetches follow: with the target's
// acknowledgements riding on its own ShareFetch, the records the member
// holds (acquired, not acknowledged) never exceed max.poll.records, and a
// round is one request most of the time, sent from the caller's goroutine.
//
// # Deferred durability (record_limit)
//
// A record_limit round is one ShareFetch that acknowledges the previous
// Poll's records and acquires the next ones; a broker answers it only once
// the acknowledgements are written to __share_group_state, a replicated
// append that dominates the round. So the consumer's record_limit fetches
// carry wiretag.ShareFetchDeferAcks (weir.share.acknowledgement.defer,
// on by default): a weir broker answers once the records are acquired and
// keeps the write pending with the session. The leader is then
// unconfirmed until an answer that waited for it: CommitSync and
// CommitAsync send it a ShareAcknowledge even with nothing pending, and
// Close's final ShareAcknowledge waits too, so both still return only
// once everything acknowledged is durable. A deferred write that failed
// comes back on the next answer for its partition and reaches the next
// commit's error (its records are delivered again: at-least-once, as
// when a broker crashes before a write); a session lost with writes
// unconfirmed is reported the same way, as their outcome is unknown.
// Other brokers ignore the tag and answer as Kafka does.
//
// Java's record_limit rotates one fetch per Poll across brokers, each
// waiting fetch.max.wait.ms, so a consumer facing one busy and N empty
// brokers spends N×fetch.max.wait.ms idle out of every N+1 Polls.

// AckType is how a share consumer acknowledges a record.
type AckType int8

// Acknowledgement types, numbered as on the wire.
const (
	// AckAccept: processed; the record is not delivered again.
	AckAccept AckType = 1
	// AckRelease: give the record back; it is delivered again (to any
	// member) with a higher delivery count.
	AckRelease AckType = 2
	// AckReject: unprocessable; the record is archived, never delivered
	// again.
	AckReject AckType = 3
)

// ShareRecord is one record delivered to a share consumer.
type ShareRecord struct {
	ConsumerRecord
	// DeliveryCount is how many times the record has been acquired,
	// counting this delivery.
	DeliveryCount int16
}

// Errors of the share consumer.
var (
	ErrNotExplicit    = errors.New("client: Acknowledge needs share.acknowledgement.mode=explicit")
	ErrNotDelivered   = errors.New("client: record was not delivered by the last Poll or was already acknowledged")
	ErrShareAckFailed = errors.New("client: acknowledgement failed")
)

type shareTP struct {
	id   [16]byte
	part int32
}

// shareLeader is the consumer's share session with one leader.
type shareLeader struct {
	epoch   int32            // next ShareSessionEpoch
	parts   map[shareTP]bool // partitions in the session
	hadData bool             // the last fetch acquired records
	asked   time.Time        // when the last fetch was sent
	// backlog is the records waiting on this leader for the member's
	// partitions, as its last answer said (wiretag.ShareFetchBacklog);
	// knows says an answer said.
	backlog int64
	knows   bool
	// unconfirmed: acknowledgements went to this leader on fetches with
	// wiretag.ShareFetchDeferAcks and no answer since has said they are
	// durable; a commit asks it (ShareAcknowledge waits for them).
	unconfirmed bool
}

// lost forgets the session with node after a failed request. The broker
// may have dropped it, and with it the acknowledgements it had not yet
// made durable: their outcome is unknown, and the next commit says so
// (their records may be delivered again). Called with sessMu held.
func (s *ShareConsumer) lost(node int32, l *shareLeader) {
	l.epoch = 0
	if l.unconfirmed {
		l.unconfirmed = false
		s.mu.Lock()
		s.ackErrs = append(s.ackErrs, fmt.Errorf("%w: node %d: the share session ended before acknowledgements sent on it were known to be durable; their records may be delivered again", ErrShareAckFailed, node))
		s.mu.Unlock()
	}
}

// ShareConsumer is a member of a share group. Like Consumer it is meant for
// one goroutine: Poll, Acknowledge, CommitSync and Close must not run
// concurrently. A heartbeat goroutine keeps the membership; Close stops it.
type ShareConsumer struct {
	cfg shareConfig
	o   options
	log *slog.Logger
	cl  *core
	co  *coordinator

	memberID string

	// sessMu serializes requests on the share sessions (a Poll's round, a
	// commit); it is taken before mu.
	sessMu  sync.Mutex
	leaders map[int32]*shareLeader
	// target is the hot leader record_limit rounds go to, stick the
	// rounds it has had in a row (guarded by sessMu).
	target int32
	stick  int

	mu        sync.Mutex // leaf: membership, acknowledgements, buffers
	topics    []string
	epoch     int32 // member epoch
	assigned  map[shareTP]bool
	hbErr     error
	pending   map[shareTP]*ackRuns // acknowledgements not sent yet
	delivered map[shareTP]*ackRuns // handed out, not yet acknowledged (type unused)
	buffered  []*ShareRecord
	ackErrs   []error
	idle      bool // the previous round asked every leader and got nothing
	rotate    int
	closed    bool

	wake     chan struct{}
	hbCtx    context.Context // ends at Close, stopping the heartbeat
	hbCancel context.CancelFunc
	wg       sync.WaitGroup
}

// NewShareConsumer validates props (Kafka's names: group.id,
// share.acquire.mode, share.acknowledgement.mode, max.poll.records,
// fetch.max.wait.ms, fetch.min.bytes, ...) and returns a consumer; it
// connects lazily.
func NewShareConsumer(props map[string]string, opts ...Option) (*ShareConsumer, error) {
	o := buildOptions(opts)
	cfg, err := parseShareConfig(props)
	if err != nil {
		return nil, err
	}
	s := &ShareConsumer{
		cfg:       cfg,
		o:         o,
		log:       o.logger,
		memberID:  newMemberID(),
		leaders:   map[int32]*shareLeader{},
		target:    -1,
		assigned:  map[shareTP]bool{},
		pending:   map[shareTP]*ackRuns{},
		delivered: map[shareTP]*ackRuns{},
		wake:      make(chan struct{}, 1),
	}
	s.hbCtx, s.hbCancel = context.WithCancel(context.Background())
	s.cl = newCore(cfg.commonConfig, o, cfg.autoCreate)
	s.co = &coordinator{cl: s.cl, group: cfg.groupID, node: -1}
	return s, nil
}

// Subscribe sets the topics of the membership; the first call starts the
// heartbeat. The assignment arrives in the background.
func (s *ShareConsumer) Subscribe(topics []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrConsumerClosed
	}
	first := s.topics == nil
	s.topics = slices.Clone(topics)
	s.cl.setInterest(topics, false)
	s.cl.requestRefresh()
	if first {
		s.wg.Add(1)
		go s.heartbeatLoop()
	}
	poke(s.wake)
	return nil
}

// Assignment lists the partitions the coordinator gave this member whose
// topic names are known.
func (s *ShareConsumer) Assignment() []TopicPartition {
	m := s.cl.meta.Load()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TopicPartition
	for tp := range s.assigned {
		if name, ok := m.byID[tp.id]; ok {
			out = append(out, TopicPartition{Topic: name, Partition: tp.part})
		}
	}
	sortTPs(out)
	return out
}

func (s *ShareConsumer) heartbeatLoop() {
	defer s.wg.Done()
	interval := 5 * time.Second
	for attempt := 0; ; {
		ctx, cancel := context.WithTimeout(s.hbCtx, s.cfg.requestTimeout)
		next, err := s.heartbeat(ctx)
		cancel()
		wait := interval
		if err != nil {
			attempt++
			wait = backoff(s.cfg.retryBackoff, s.cfg.retryBackoffMax, attempt, s.o.rand)
			s.log.Debug("share heartbeat failed", "group", s.cfg.groupID, "err", err)
		} else {
			attempt = 0
			if next > 0 {
				interval = next
			}
			wait = interval
		}
		t := time.NewTimer(wait)
		select {
		case <-s.hbCtx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// heartbeat sends one ShareGroupHeartbeat and applies its answer.
func (s *ShareConsumer) heartbeat(ctx context.Context) (time.Duration, error) {
	s.mu.Lock()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = s.cfg.groupID, s.memberID, s.epoch
	req.SubscribedTopicNames = slices.Clone(s.topics)
	if s.cfg.rack != "" {
		req.RackID = &s.cfg.rack
	}
	s.mu.Unlock()
	raw, err := s.co.do(ctx, req, s.cfg.requestTimeout, func(r kmsg.Response) error {
		return kerr.ErrorForCode(r.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode)
	})
	if err != nil {
		var ke *kerr.Error
		s.mu.Lock()
		switch {
		case errors.Is(err, kerr.FencedMemberEpoch) || errors.Is(err, kerr.UnknownMemberID):
			s.epoch = 0 // rejoin
		case errors.As(err, &ke) && !ke.Retriable:
			s.hbErr = fmt.Errorf("client: share group %s heartbeat: %w", s.cfg.groupID, err)
		}
		s.mu.Unlock()
		return 0, err
	}
	resp := raw.(*kmsg.ShareGroupHeartbeatResponse)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		s.assigned = map[shareTP]bool{}
		m := s.cl.meta.Load()
		for _, t := range resp.Assignment.TopicPartitions {
			if _, ok := m.byID[t.TopicID]; !ok {
				s.cl.requestRefresh()
			}
			for _, p := range t.Partitions {
				s.assigned[shareTP{t.TopicID, p}] = true
			}
		}
	}
	return time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond, nil
}

// shareFetchPlan is one request of a round.
type shareFetchPlan struct {
	node       int32
	maxRecords int32
	maxWait    time.Duration
}

// shareRound is what planShareFetches decides from.
type shareRound struct {
	nodes []int32 // the leaders of the assignment, sorted
	hot   []bool  // hot[i]: leader i's last fetch acquired records
	// probe[i]: leader i is empty and due for a probe (record_limit).
	probe []bool
	// target is the index of the hot leader served this round
	// (record_limit), -1 when no leader is hot.
	target         int
	maxPollRecords int
	recordLimit    bool
	// idle: the previous round asked every leader and got nothing.
	idle    bool
	maxWait time.Duration
	// rotate picks who is served first when record_limit's budget cannot
	// cover every leader.
	rotate int
}

// planShareFetches applies the fetch policy (see the package comment of
// share.go): the requests of one round, none with MaxRecords 0.
func planShareFetches(r shareRound) []shareFetchPlan {
	n := len(r.nodes)
	if n == 0 {
		return nil
	}
	var wait time.Duration
	if r.idle {
		wait = r.maxWait
	}
	capped := int32(min(r.maxPollRecords, math.MaxInt32))
	var out []shareFetchPlan
	switch {
	case !r.recordLimit:
		for _, node := range r.nodes {
			out = append(out, shareFetchPlan{node: node, maxRecords: capped, maxWait: wait})
		}
	case r.target >= 0:
		// The hot target gets the cap less one record per probe; probes
		// beyond the cap wait for a later round (in rotation).
		var probes []int32
		for k := range n {
			j := (r.rotate + k) % n
			if j != r.target && r.probe[j] && !r.hot[j] && len(probes) < r.maxPollRecords-1 {
				probes = append(probes, r.nodes[j])
			}
		}
		out = append(out, shareFetchPlan{node: r.nodes[r.target], maxRecords: int32(r.maxPollRecords - len(probes)), maxWait: wait})
		for _, node := range probes {
			out = append(out, shareFetchPlan{node: node, maxRecords: 1, maxWait: wait})
		}
	default:
		// Nobody is known to have records: every leader is asked, the cap
		// split evenly; leaders beyond it wait for a later round.
		for i := range min(n, r.maxPollRecords) {
			out = append(out, shareFetchPlan{node: r.nodes[(r.rotate+i)%n], maxRecords: int32(evenShare(r.maxPollRecords, n, i)), maxWait: wait})
		}
	}
	return out
}

// evenShare is the i-th of n near-equal parts of total.
func evenShare(total, n, i int) int {
	share := total / n
	if i < total%n {
		share++
	}
	return share
}

// Poll acknowledges, in implicit mode, everything the previous Poll
// returned, and returns the next records: at most max.poll.records. It
// returns when records arrived, or after one round that found none (which
// waits up to fetch.max.wait.ms when the round before was empty too), or
// when ctx ends.
func (s *ShareConsumer) Poll(ctx context.Context) ([]*ShareRecord, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrConsumerClosed
	}
	if s.hbErr != nil {
		err := s.hbErr
		s.hbErr = nil
		s.mu.Unlock()
		return nil, err
	}
	if !s.cfg.explicit {
		s.acceptDeliveredLocked()
	}
	s.mu.Unlock()
	if recs := s.takeBuffered(); len(recs) > 0 {
		return recs, nil
	}
	if err := s.round(ctx, true); err != nil {
		return nil, err
	}
	return s.takeBuffered(), nil
}

// acceptDeliveredLocked turns every delivered, unacknowledged record into a
// pending ACCEPT.
func (s *ShareConsumer) acceptDeliveredLocked() {
	for tp, d := range s.delivered {
		p := runsFor(s.pending, tp)
		for _, x := range *d {
			p.set(x.first, x.last, AckAccept, false)
		}
	}
	clear(s.delivered)
}

// runsFor returns m's runs for tp, adding empty ones.
func runsFor(m map[shareTP]*ackRuns, tp shareTP) *ackRuns {
	r := m[tp]
	if r == nil {
		r = &ackRuns{}
		m[tp] = r
	}
	return r
}

// takeBuffered hands out up to max.poll.records buffered records and notes
// them as delivered.
func (s *ShareConsumer) takeBuffered() []*ShareRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(s.buffered), s.cfg.maxPollRecords)
	out := s.buffered[:n:n]
	s.buffered = slices.Clone(s.buffered[n:])
	m := s.cl.meta.Load()
	var tp shareTP
	var d *ackRuns
	for i, r := range out {
		// Records come in runs of one partition: look it up once a run.
		if i == 0 || r.Partition != out[i-1].Partition || r.Topic != out[i-1].Topic {
			tp = tpIn(m, r)
			d = runsFor(s.delivered, tp)
		}
		d.set(r.Offset, r.Offset, 0, false)
	}
	return out
}

func (s *ShareConsumer) tpOf(r *ShareRecord) shareTP {
	return tpIn(s.cl.meta.Load(), r)
}

func tpIn(m *metadata, r *ShareRecord) shareTP {
	var id [16]byte
	if t := m.topics[r.Topic]; t != nil {
		id = t.id
	}
	return shareTP{id, r.Partition}
}

// Acknowledge records how r was processed (explicit mode); it is sent with
// the next Poll or commit.
func (s *ShareConsumer) Acknowledge(r *ShareRecord, t AckType) error {
	if !s.cfg.explicit {
		return ErrNotExplicit
	}
	if t < AckAccept || t > AckReject {
		return fmt.Errorf("client: unknown acknowledgement type %d", t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := s.tpOf(r)
	if d := s.delivered[tp]; d == nil || !d.remove(r.Offset) {
		return ErrNotDelivered
	}
	runsFor(s.pending, tp).set(r.Offset, r.Offset, t, false)
	return nil
}

// takeAcks removes the pending acknowledgements of the partitions led by
// node (or all when node < 0 is not used) and returns them per partition.
func (s *ShareConsumer) takeAcks(m *metadata, node int32) map[shareTP]ackRuns {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[shareTP]ackRuns{}
	for tp, offs := range s.pending {
		if len(*offs) == 0 {
			delete(s.pending, tp)
			continue
		}
		if s.leaderOf(m, tp) != node {
			continue
		}
		out[tp] = *offs
		delete(s.pending, tp)
	}
	return out
}

// restoreAcks puts acknowledgements back after a request failed before the
// broker applied them.
func (s *ShareConsumer) restoreAcks(acks map[shareTP]ackRuns) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, offs := range acks {
		p := runsFor(s.pending, tp)
		for _, x := range offs {
			// Acknowledgements made since are newer: they stay.
			p.set(x.first, x.last, x.t, true)
		}
	}
}

func (s *ShareConsumer) leaderOf(m *metadata, tp shareTP) int32 {
	name, ok := m.byID[tp.id]
	if !ok {
		return -1
	}
	l, _ := m.leader(name, tp.part)
	return l
}

// round runs one fetch round over every leader of the assignment (fetch
// false: acknowledgements only, with ShareAcknowledge).
func (s *ShareConsumer) round(ctx context.Context, fetch bool) error {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	m := s.cl.meta.Load()
	s.mu.Lock()
	byNode := map[int32][]shareTP{}
	for tp := range s.assigned {
		if l := s.leaderOf(m, tp); l >= 0 {
			byNode[l] = append(byNode[l], tp)
		} else {
			s.cl.requestRefresh()
		}
	}
	ackNodes := map[int32]bool{}
	for tp, offs := range s.pending {
		if l := s.leaderOf(m, tp); l >= 0 && len(*offs) > 0 {
			ackNodes[l] = true
		}
	}
	if !fetch {
		// A commit also asks the leaders holding acknowledgements whose
		// durability was deferred: ShareAcknowledge waits for them.
		for n, l := range s.leaders {
			if l.unconfirmed && l.epoch != 0 {
				ackNodes[n] = true
			}
		}
	}
	idle, rotate := s.idle, s.rotate
	s.rotate++
	s.mu.Unlock()

	var nodes []int32
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	var plans []shareFetchPlan
	if fetch {
		plans = planShareFetches(s.roundState(nodes, idle, rotate))
	}
	planned := map[int32]bool{}
	for _, p := range plans {
		planned[p.node] = true
	}
	var ackOnly []int32
	for n := range ackNodes {
		if !planned[n] {
			ackOnly = append(ackOnly, n)
		}
	}
	if len(plans) == 0 && len(ackOnly) == 0 {
		if fetch {
			// Nothing assigned yet: wait a little for the heartbeat.
			t := time.NewTimer(min(s.cfg.fetchMaxWait, 100*time.Millisecond))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}

	// Sessions are made here so the goroutines below only read the map.
	for _, p := range plans {
		s.leader(p.node)
	}
	for _, n := range ackOnly {
		s.leader(n)
	}
	var errMu sync.Mutex
	var errs []error
	got := 0
	note := func(n int, err error) {
		errMu.Lock()
		got += n
		if err != nil {
			errs = append(errs, err)
		}
		errMu.Unlock()
	}
	acks := make([]func(), len(ackOnly))
	for i, n := range ackOnly {
		acks[i] = func() { note(0, s.acknowledgeTo(ctx, m, n, false)) }
	}
	fetches := make([]func(), len(plans))
	now := time.Now()
	for i, p := range plans {
		s.leaders[p.node].asked = now
		fetches[i] = func() { note(s.fetchFrom(ctx, m, p, byNode[p.node])) }
	}
	if s.cfg.recordLimit {
		// The strict cap: records acknowledged to a leader this round
		// is not fetching from are released there before anything new
		// is acquired, so the member never holds more than the cap.
		runAll(acks)
		runAll(fetches)
	} else {
		runAll(append(acks, fetches...))
	}
	if fetch {
		s.mu.Lock()
		s.idle = got == 0 && len(plans) == len(nodes)
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// runAll runs fns at once and waits for them; a single one runs on the
// caller's goroutine.
func runAll(fns []func()) {
	if len(fns) == 1 {
		fns[0]()
		return
	}
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Go(fn)
	}
	wg.Wait()
}

// shareStickRounds is how many rounds in a row record_limit serves one
// hot leader before turning to the next hot one, and shareProbeEvery how
// often it asks an empty leader for one record meanwhile. A turn costs a
// round trip (the acknowledgements for the leader left are answered
// before the next one is fetched from): 64 rounds keep that under 2% of
// a drain, and a leader with records waits at most 64 Polls for its turn.
const (
	shareStickRounds = 64
	shareProbeEvery  = 50 * time.Millisecond
)

// roundState gathers what planShareFetches needs and, with record_limit,
// picks the round's target: the hot leader served last, for up to
// shareStickRounds rounds, then the next hot one. Called with sessMu held.
func (s *ShareConsumer) roundState(nodes []int32, idle bool, rotate int) shareRound {
	r := shareRound{
		nodes: nodes, hot: make([]bool, len(nodes)), probe: make([]bool, len(nodes)), target: -1,
		maxPollRecords: s.cfg.maxPollRecords, recordLimit: s.cfg.recordLimit,
		idle: idle, maxWait: s.cfg.fetchMaxWait, rotate: rotate,
	}
	now := time.Now()
	cur := -1
	for i, n := range nodes {
		l := s.leaders[n]
		r.hot[i] = l != nil && l.hadData
		r.probe[i] = l == nil || now.Sub(l.asked) >= shareProbeEvery
		if n == s.target {
			cur = i
		}
	}
	if !s.cfg.recordLimit {
		return r
	}
	if j, ok := s.heaviest(nodes, cur); ok {
		if j != cur {
			s.target, s.stick = nodes[j], 0
		}
		s.stick++
		r.target = j
		return r
	}
	if cur >= 0 && r.hot[cur] && s.stick < shareStickRounds {
		r.target = cur
		s.stick++
		return r
	}
	for k := 1; k <= len(nodes); k++ {
		j := (max(cur, 0) + k) % len(nodes)
		if cur < 0 {
			j = k - 1
		}
		if r.hot[j] {
			r.target, s.target, s.stick = j, nodes[j], 1
			return r
		}
	}
	s.target, s.stick = -1, 0
	return r
}

// heaviest picks the round's target from the leaders' backlogs, when
// their answers say (wiretag.ShareFetchBacklog): the leader with the most
// records waiting, unless the current target still has records and no
// other has more than shareSwitchFactor times as many (each switch costs
// a round trip for the acknowledgements left behind). false when no
// leader is known to have records: the hot-leader rule decides. Called
// with sessMu held.
func (s *ShareConsumer) heaviest(nodes []int32, cur int) (int, bool) {
	if !s.cfg.backlogHints {
		return -1, false
	}
	best, bestN := -1, int64(0)
	for i, n := range nodes {
		if l := s.leaders[n]; l != nil && l.knows && l.backlog > bestN {
			best, bestN = i, l.backlog
		}
	}
	if best < 0 {
		return -1, false
	}
	if cur >= 0 {
		if l := s.leaders[nodes[cur]]; l != nil && l.knows && l.backlog > 0 && bestN <= shareSwitchFactor*l.backlog {
			return cur, true
		}
	}
	return best, true
}

// shareSwitchFactor is how much larger another leader's backlog must be
// for record_limit to leave a target that still has records.
const shareSwitchFactor = 2

func (s *ShareConsumer) leader(node int32) *shareLeader {
	l := s.leaders[node]
	if l == nil {
		l = &shareLeader{parts: map[shareTP]bool{}}
		s.leaders[node] = l
	}
	return l
}

func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// isSessionErr reports errors after which the share session must be opened
// again.
func isSessionErr(err error) bool {
	return errors.Is(err, kerr.ShareSessionNotFound) || errors.Is(err, kerr.InvalidShareSessionEpoch)
}

// fetchFrom sends one ShareFetch to p.node for parts, with the pending
// acknowledgements of the partitions it leads, and buffers what it
// acquired. It is called with sessMu held; leaders[p.node] is touched by
// this goroutine only during the round.
func (s *ShareConsumer) fetchFrom(ctx context.Context, m *metadata, p shareFetchPlan, parts []shareTP) (int, error) {
	l := s.leaders[p.node]
	acks := s.takeAcks(m, p.node)
	req := kmsg.NewPtrShareFetchRequest()
	group, member := s.cfg.groupID, s.memberID
	req.GroupID, req.MemberID = &group, &member
	req.ShareSessionEpoch = l.epoch
	req.MaxWaitMillis = int32(p.maxWait.Milliseconds())
	req.MinBytes, req.MaxBytes = s.cfg.fetchMinBytes, s.cfg.fetchMaxBytes
	req.MaxRecords, req.BatchSize = p.maxRecords, p.maxRecords
	if s.cfg.recordLimit {
		req.ShareAcquireMode = 1
		// This consumer asks every leader at once when it waits, so weir
		// brokers keep its MaxWaitMs (wiretag.ShareFetchAllLeaders).
		wiretag.SetShareFetchAllLeaders(&req.UnknownTags)
	}
	if s.cfg.deferAcks {
		// Answered once acquired; the acknowledgements' durability is
		// settled by a later ShareAcknowledge (a commit) or close.
		wiretag.SetShareFetchDeferAcks(&req.UnknownTags)
	}
	if s.cfg.backlogHints {
		wiretag.SetShareFetchBacklogWanted(&req.UnknownTags)
	}
	want := map[shareTP]bool{}
	for _, tp := range parts {
		want[tp] = true
	}
	if l.epoch == 0 {
		// A new session: acknowledgements cannot ride on its opening.
		if len(acks) > 0 {
			s.restoreAcks(acks)
			acks = nil
		}
		l.parts = map[shareTP]bool{}
	}
	send := map[shareTP]bool{}
	for tp := range want {
		if !l.parts[tp] {
			send[tp] = true
		}
	}
	for tp := range acks {
		send[tp] = true
	}
	eachByTopic(sortedShareTPs(send), func(id [16]byte) int {
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = id
		req.Topics = append(req.Topics, t)
		return len(req.Topics) - 1
	}, func(i int, tp shareTP) {
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = tp.part, s.cfg.partitionMax
		rp.AcknowledgementBatches = ackBatches(acks[tp])
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	})
	var forget []shareTP
	if l.epoch != 0 {
		for tp := range l.parts {
			if !want[tp] {
				forget = append(forget, tp)
			}
		}
	}
	eachByTopic(forget, func(id [16]byte) int {
		f := kmsg.NewShareFetchRequestForgottenTopicsData()
		f.TopicID = id
		req.ForgottenTopicsData = append(req.ForgottenTopicsData, f)
		return len(req.ForgottenTopicsData) - 1
	}, func(i int, tp shareTP) {
		req.ForgottenTopicsData[i].Partitions = append(req.ForgottenTopicsData[i].Partitions, tp.part)
	})
	conn, err := s.cl.conn(ctx, p.node)
	if err != nil {
		s.restoreAcks(acks)
		return 0, err
	}
	raw, err := conn.Do(ctx, req, s.cfg.requestTimeout+p.maxWait)
	if err != nil {
		s.restoreAcks(acks)
		s.lost(p.node, l) // the broker may or may not have seen it
		return 0, err
	}
	resp := raw.(*kmsg.ShareFetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		s.restoreAcks(acks)
		if isSessionErr(err) {
			s.lost(p.node, l)
			return 0, nil
		}
		return 0, fmt.Errorf("client: share fetch from node %d: %w", p.node, err)
	}
	l.epoch = nextSessionEpoch(l.epoch)
	switch {
	case !s.cfg.deferAcks:
		// The broker waited for every acknowledgement before answering.
		l.unconfirmed = false
	case len(acks) > 0:
		l.unconfirmed = true
	}
	if entries, ok, err := wiretag.ShareFetchBacklogOf(&resp.UnknownTags); ok && err == nil {
		l.backlog, l.knows = 0, true
		for _, e := range entries {
			if want[shareTP{e.TopicID, e.Partition}] {
				l.backlog += e.Records
			}
		}
	}
	for tp := range send {
		if want[tp] {
			l.parts[tp] = true
		}
	}
	for _, tp := range forget {
		delete(l.parts, tp)
	}
	n := 0
	var errs []error
	for _, t := range resp.Topics {
		name := m.byID[t.TopicID]
		for _, rp := range t.Partitions {
			tp := shareTP{t.TopicID, rp.Partition}
			if err := kerr.ErrorForCode(rp.AcknowledgeErrorCode); err != nil {
				s.noteAckErr(name, tp.part, err)
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				if errors.Is(err, kerr.NotLeaderForPartition) || errors.Is(err, kerr.UnknownTopicOrPartition) {
					s.cl.requestRefresh()
					continue
				}
				errs = append(errs, fmt.Errorf("client: share fetch %s/%d: %w", name, tp.part, err))
				continue
			}
			recs, err := decodeAcquired(name, &rp)
			if err != nil {
				errs = append(errs, err)
			}
			n += len(recs)
			if len(recs) > 0 {
				s.mu.Lock()
				s.buffered = append(s.buffered, recs...)
				s.mu.Unlock()
			}
		}
	}
	l.hadData = n > 0
	return n, errors.Join(errs...)
}

func (s *ShareConsumer) noteAckErr(topic string, part int32, err error) {
	s.mu.Lock()
	s.ackErrs = append(s.ackErrs, fmt.Errorf("%w: %s/%d: %w", ErrShareAckFailed, topic, part, err))
	s.mu.Unlock()
}

// decodeAcquired returns the records of rp that fall in its acquired ranges,
// with their delivery counts.
func decodeAcquired(topic string, rp *kmsg.ShareFetchResponseTopicPartition) ([]*ShareRecord, error) {
	if len(rp.AcquiredRecords) == 0 {
		return nil, nil
	}
	count := func(off int64) (int16, bool) {
		i := sort.Search(len(rp.AcquiredRecords), func(i int) bool { return rp.AcquiredRecords[i].LastOffset >= off })
		if i < len(rp.AcquiredRecords) && rp.AcquiredRecords[i].FirstOffset <= off {
			return rp.AcquiredRecords[i].DeliveryCount, true
		}
		return 0, false
	}
	var want int64
	for _, ar := range rp.AcquiredRecords {
		want += max(ar.LastOffset-ar.FirstOffset+1, 0)
	}
	out := make([]*ShareRecord, 0, min(want, 1<<16))
	// The records are copied into slabs, one allocation for many records;
	// a slab is never grown, so the pointers into it stay its own.
	var slab []ShareRecord
	kept := 0 // out[:kept] are of whole batches
	err := records.DecodeEach(rp.Records, 256<<20, func(_ *records.Batch, r records.Record) {
		dc, ok := count(r.Offset)
		if !ok {
			return
		}
		if len(slab) == cap(slab) {
			slab = make([]ShareRecord, 0, min(max(want-int64(len(out)), 16), 1<<12))
		}
		slab = append(slab, ShareRecord{ConsumerRecord: ConsumerRecord{Topic: topic, Partition: rp.Partition, Offset: r.Offset, Timestamp: time.UnixMilli(r.Timestamp), Key: r.Key, Value: r.Value, LeaderEpoch: r.LeaderEpoch}, DeliveryCount: dc})
		sr := &slab[len(slab)-1]
		for _, h := range r.Headers {
			sr.Headers = append(sr.Headers, Header{Key: h.Key, Value: h.Value})
		}
		out = append(out, sr)
	}, func(*records.Batch) { kept = len(out) })
	if err != nil {
		return out[:kept], fmt.Errorf("client: share fetch %s/%d: %w", topic, rp.Partition, err)
	}
	return out, nil
}

func sortedShareTPs(set map[shareTP]bool) []shareTP {
	out := make([]shareTP, 0, len(set))
	for tp := range set {
		out = append(out, tp)
	}
	slices.SortFunc(out, func(a, b shareTP) int {
		if c := slices.Compare(a.id[:], b.id[:]); c != 0 {
			return c
		}
		return int(a.part) - int(b.part)
	})
	return out
}

// eachByTopic walks tps for a request's topic list: newTopic appends a
// topic and returns its index, the first time its id appears; add then
// gets each partition with its topic's index.
func eachByTopic(tps []shareTP, newTopic func(id [16]byte) int, add func(i int, tp shareTP)) {
	idx := map[[16]byte]int{}
	for _, tp := range tps {
		i, ok := idx[tp.id]
		if !ok {
			i = newTopic(tp.id)
			idx[tp.id] = i
		}
		add(i, tp)
	}
}
