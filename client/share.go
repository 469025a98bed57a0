package client

import (
	"cmp"
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
// A Poll runs a round of ShareFetch requests, at most one per leader of
// the assigned partitions, sent together, each on a goroutine of its own
// (launch); a leader with a fetch in flight is not sent another request.
// The Poll returns as soon as answers brought records and no fetch sent
// without a wait is still out: a fetch that may wait (MaxWaitMs > 0)
// stays in flight after the Poll returns, and what it acquires is
// buffered for a later Poll, its acknowledgements going to its leader on
// that session's next request. An answer without records frees its
// leader for another round within the same Poll, so records reaching one
// leader are fetched while the others' waits run, not after them; a Poll
// that finds nothing returns when a waiting fetch comes back empty (or
// when nothing is in flight after a round without a wait). A fetch is
// never cancelled for a Poll's sake (what it acquired would stay locked
// until the acquisition lock timed out): fetches run on the consumer's
// context; a commit waits only for those whose leader it must ask
// (commitRound), Close for all of them, and Close cancels them only
// when its own context ends first. Which leaders are asked, for how many
// records (MaxRecords) and how long they may wait (MaxWaitMs) is
// planShareFetches, a pure function with its own tests, over the leaders
// with no fetch in flight:
//
//   - batch_optimized: every leader, each for max.poll.records, a soft
//     cap, as Kafka does; records beyond max.poll.records wait in the
//     consumer for the next Poll, still locked.
//   - record_limit, a strict cap, with backlog hints (the default, from
//     weir brokers: wiretag.ShareFetchBacklog says how many records wait
//     for the member on each leader): a round goes to the leader with the
//     most waiting, with the whole cap less the probes below, and stays
//     with it while it has records and no other leader has more than
//     shareSwitchFactor times as many (heaviest); but when several leaders
//     have records and none has the cap's worth, the round asks each of
//     them, the cap less the probes split in proportion to their backlogs
//     (splitByBacklog), so that a light leader's records do not wait for
//     a heavier one's turn to end (share case 3: p99 end-to-end 762 ms
//     with one leader a round, 112 ms split). A deep backlog still drains
//     one leader, one request, a round (share case 2: split over three
//     leaders, the drain took three times as long). Without hints (another
//     broker, or weir.share.fetch.backlog.hints=false) a leader whose
//     last fetch acquired records is hot, and full when that fetch got
//     all it asked for. While any leader is full, a round goes to one
//     full leader, the target, with the whole cap: the leader that just
//     filled its fetch is asked again at once, for up to shareStickRounds
//     rounds, then the next full leader takes over (so that a long backlog
//     on one leader does not starve another); a target that returns less
//     than it was asked has no backlog left, and the round turns at once.
//     A leader not asked for shareProbeEvery gets a probe of one record
//     in the same round, taken off the target's share, so that records
//     arriving there are found without a wait: an empty one always, a
//     hot one too with hints, as its answer is where its backlog is
//     learnt (else a leader left with records would keep the hint it
//     gave last while the target trickles). When no leader is full,
//     every leader is asked, the cap split evenly (leaders beyond the cap
//     wait for a later round; the starting leader rotates).
//   - Waiting: a round waits up to fetch.max.wait.ms only when the round
//     before asked every leader (or they were in flight) and got nothing;
//     otherwise MaxWaitMs is 0. A leader with nothing never holds a Poll
//     while another has records; an idle consumer long-polls after at
//     most two empty 0-wait rounds (the target alone, then every leader).
//   - With record_limit the fetches in flight keep their MaxRecords out
//     of the cap: a round shares only what is left.
//
// Share case 4 (a trickle over six leaders, EXPERIMENTS.md) measured
// what waiting for every answer cost: records one leader answered at
// once waited for the other leaders' long polls: p99 end-to-end 479 ms
// at 200 records/s with fetch.max.wait.ms 500, 13-18 ms once a Poll
// returned with the first answer's records (bench/results/share-tail-*.md).
//
// With record_limit the acknowledgements of the previous Poll for a
// leader this round does not fetch from go first, alone
// (ShareAcknowledge), and the fetches follow: with the target's
// acknowledgements riding on its own ShareFetch, the records the member
// holds (acquired, not acknowledged) never exceed max.poll.records, and a
// round is one request most of the time. Acknowledgements for a leader
// with a fetch in flight wait for its answer and go on its next request.
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
	full    bool             // the last fetch acquired all it asked for
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
	// inflight: a ShareFetch to this leader is out. Its goroutine owns
	// every other field until its answer is taken (takeAnswers); then
	// whoever holds sessMu does again. reserved is that fetch's
	// MaxRecords, waits whether it may wait (MaxWaitMs > 0). Set and
	// cleared under sessMu.
	inflight bool
	reserved int32
	waits    bool
	// owed: the fetch in flight carries acknowledgements, or the leader
	// was unconfirmed when it was sent: a commit waits for its answer
	// and then asks the leader (commitRound). Set and cleared with
	// inflight.
	owed bool
}

// lost forgets the session with node after a failed request. The broker
// may have dropped it, and with it the acknowledgements it had not yet
// made durable: their outcome is unknown, and the next commit says so
// (their records may be delivered again). Called by l's owner: the
// holder of sessMu, or the goroutine of l's fetch in flight.
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
	// rounds it has had in a row; fetchErrs the errors of fetches
	// answered, for the next Poll (guarded by sessMu).
	target    int32
	stick     int
	fetchErrs []error

	mu        sync.Mutex // leaf: membership, acknowledgements, buffers
	topics    []string
	epoch     int32 // member epoch
	assigned  map[shareTP]bool
	hbErr     error
	pending   map[shareTP]*ackRuns // acknowledgements not sent yet
	delivered map[shareTP]*ackRuns // handed out, not yet acknowledged (type unused)
	buffered  []*ShareRecord
	// answers are the fetches answered and not yet taken by a Poll, a
	// commit or Close (takeAnswers); answered is poked with each.
	answers []shareAnswer
	ackErrs []error
	idle    bool // the previous round asked every leader and got nothing
	rotate  int
	closed  bool

	wake     chan struct{}
	answered chan struct{}
	hbCtx    context.Context // ends at Close, stopping the heartbeat
	hbCancel context.CancelFunc
	wg       sync.WaitGroup
	// fetchCtx is the in-flight fetches' context: theirs, not a Poll's,
	// since a fetch outlives the Poll that sent it; Close ends it if
	// its own context ends before they are answered. fetches counts
	// their goroutines.
	fetchCtx    context.Context
	fetchCancel context.CancelFunc
	fetches     sync.WaitGroup
}

// shareAnswer is what one ShareFetch brought: n records (already in
// buffered), or err.
type shareAnswer struct {
	node int32
	n    int
	err  error
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
		answered:  make(chan struct{}, 1),
	}
	s.hbCtx, s.hbCancel = context.WithCancel(context.Background())
	s.fetchCtx, s.fetchCancel = context.WithCancel(context.Background())
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
	// probe[i]: leader i is due for a probe (record_limit): asked last
	// more than shareProbeEvery ago.
	probe []bool
	// probeHot: probes go to hot leaders too, not only to empty ones.
	// With backlog hints a leader's backlog is known only from its own
	// answers; one that had records when a round turned away from it
	// would otherwise never be asked again while the target has any,
	// and the hint it gave last (often 0, just drained) would stay.
	probeHot bool
	// backlog[i]: the records waiting on leader i by its last answer's
	// hint, set (record_limit with hints) when more than one leader has
	// some and none has a whole round's worth: the round then asks each
	// of them, the cap split in proportion (splitByBacklog), instead of
	// serving one target.
	backlog []int64
	// target is the index of the leader served this round
	// (record_limit): the heaviest by the hints, else a full one; -1
	// when none is.
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
	case r.backlog != nil:
		// Every leader with records waiting gets its part of the cap
		// less one record per probe, the heaviest first; leaders with
		// none are probed when due.
		var probes []int32
		for k := range n {
			j := (r.rotate + k) % n
			if r.backlog[j] == 0 && r.probe[j] && len(probes) < r.maxPollRecords-1 {
				probes = append(probes, r.nodes[j])
			}
		}
		shares := splitByBacklog(r.maxPollRecords-len(probes), r.backlog)
		order := make([]int, 0, n)
		for i := range n {
			if shares[i] > 0 {
				order = append(order, i)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.backlog[b], r.backlog[a]) })
		for _, i := range order {
			out = append(out, shareFetchPlan{node: r.nodes[i], maxRecords: int32(shares[i]), maxWait: wait})
		}
		for _, node := range probes {
			out = append(out, shareFetchPlan{node: node, maxRecords: 1, maxWait: wait})
		}
	case r.target >= 0:
		// The hot target gets the cap less one record per probe; probes
		// beyond the cap wait for a later round (in rotation).
		var probes []int32
		for k := range n {
			j := (r.rotate + k) % n
			if j != r.target && r.probe[j] && (r.probeHot || !r.hot[j]) && len(probes) < r.maxPollRecords-1 {
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

// splitByBacklog splits total records over leaders in proportion to
// their backlogs: each gets the floor of its part, and what the floors
// leave goes one record at a time to the heaviest first. A leader whose
// part is under one record may get none this round.
func splitByBacklog(total int, backlog []int64) []int {
	shares := make([]int, len(backlog))
	var sum float64
	var order []int
	for i, b := range backlog {
		if b > 0 {
			sum += float64(b)
			order = append(order, i)
		}
	}
	if total <= 0 || len(order) == 0 {
		return shares
	}
	left := total
	for _, i := range order {
		shares[i] = int(float64(total) * float64(backlog[i]) / sum)
		left -= shares[i]
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(backlog[b], backlog[a]) })
	for k := 0; left > 0; k++ {
		shares[order[k%len(order)]]++
		left--
	}
	return shares
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
// returns as soon as a fetch brought records (once the fetches sent
// without a wait are answered too; fetches that may wait stay in flight,
// and what they bring is kept for a later Poll), or when a waiting fetch
// came back empty, or after a round without a wait found nothing and
// nothing else is in flight, or when ctx ends.
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
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	s.takeAnswers()
	if err := s.takeFetchErrs(); err != nil {
		return nil, err
	}
	if recs := s.takeBuffered(); len(recs) > 0 {
		return recs, nil
	}
	return s.pollRounds(ctx)
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

// pollRounds runs rounds of fetches until one brings records: each round
// asks the leaders with no fetch in flight (planShareFetches), and waits
// for answers. Records return once no fetch without a wait is out; an
// answer without records frees its leader for the next round while the
// other leaders' waiting fetches stay out, so records that reach one
// leader never wait for another leader's wait. Called with sessMu held.
func (s *ShareConsumer) pollRounds(ctx context.Context) ([]*ShareRecord, error) {
	asked := map[int32]bool{} // leaders asked by this Poll or in flight
	for pass := 1; ; pass++ {
		nodes, err := s.startRound(ctx, asked)
		allAsked := true
		for _, n := range nodes {
			allAsked = allAsked && asked[n]
		}
		if !s.anyInflight() {
			// Nothing assigned yet: wait a little for the heartbeat.
			t := time.NewTimer(min(s.cfg.fetchMaxWait, 100*time.Millisecond))
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		for {
			if err := s.waitAnswer(ctx); err != nil {
				return nil, err
			}
			_, expired := s.takeAnswers()
			if err := s.takeFetchErrs(); err != nil {
				return nil, err
			}
			if s.quickInflight() {
				// Its answer comes at once: wait for it, so that a
				// round's records come together.
				continue
			}
			if recs := s.takeBuffered(); len(recs) > 0 {
				s.setIdle(false)
				return recs, nil
			}
			// Nothing: the next round waits only once every leader
			// was asked (or is) and found nothing.
			s.setIdle(allAsked)
			if expired || !s.anyInflight() || pass >= shareMaxPasses {
				return nil, nil
			}
			break
		}
	}
}

// shareMaxPasses bounds the rounds of one Poll that finds nothing: a
// round to the target, one to every leader, one that waits.
const shareMaxPasses = 4

func (s *ShareConsumer) setIdle(idle bool) {
	s.mu.Lock()
	s.idle = idle
	s.mu.Unlock()
}

// startRound sends one round's ShareFetch requests to the leaders of the
// assignment with no fetch in flight, and ShareAcknowledge to those that
// hold acknowledgements and are not fetched from (with record_limit
// first, answered before anything is acquired). It returns the leaders
// of the assignment and adds those asked, or in flight, to asked. With
// record_limit, the fetches in flight keep their MaxRecords from the cap.
// Called with sessMu held.
func (s *ShareConsumer) startRound(ctx context.Context, asked map[int32]bool) ([]int32, error) {
	m := s.cl.meta.Load()
	byNode, ackNodes := s.byLeader(m)
	s.mu.Lock()
	idle, rotate := s.idle, s.rotate
	s.rotate++
	s.mu.Unlock()

	budget := s.cfg.maxPollRecords
	for n, l := range s.leaders {
		if l.inflight {
			asked[n] = true
			if s.cfg.recordLimit {
				budget -= int(l.reserved)
			}
		}
	}
	var nodes, free []int32
	for n := range byNode {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	for _, n := range nodes {
		if l := s.leaders[n]; l == nil || !l.inflight {
			free = append(free, n)
		}
	}
	var plans []shareFetchPlan
	if budget > 0 && len(free) > 0 {
		plans = planShareFetches(s.roundState(free, idle, rotate, budget))
	}
	planned := map[int32]bool{}
	for _, p := range plans {
		planned[p.node] = true
	}
	var ackOnly []int32
	for n := range ackNodes {
		if l := s.leaders[n]; !planned[n] && (l == nil || !l.inflight) {
			ackOnly = append(ackOnly, n)
		}
	}
	var err error
	if s.cfg.recordLimit {
		// The strict cap: records acknowledged to a leader this round
		// is not fetching from are released there before anything new
		// is acquired, so the member never holds more than the cap.
		err = s.acknowledgeAll(ctx, m, ackOnly, false)
	}
	for _, p := range plans {
		s.launch(m, p, byNode[p.node])
		asked[p.node] = true
	}
	if !s.cfg.recordLimit {
		err = s.acknowledgeAll(ctx, m, ackOnly, false)
	}
	return nodes, err
}

// byLeader groups the assigned partitions by leader and lists the leaders
// of partitions with acknowledgements pending.
func (s *ShareConsumer) byLeader(m *metadata) (map[int32][]shareTP, map[int32]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	return byNode, ackNodes
}

// commitRound sends every pending acknowledgement with ShareAcknowledge,
// and asks every leader holding acknowledgements whose durability was
// deferred (ShareAcknowledge waits for them). A leader is sent one
// request at a time: those with no fetch in flight are asked at once;
// one whose fetch in flight is owed (it carries acknowledgements, or the
// leader was unconfirmed) is asked once that fetch is answered, and the
// other fetches in flight are not waited for (a long poll on a leader
// with nothing to acknowledge does not hold a commit for
// fetch.max.wait.ms). Each leader is asked at most once per commit.
//
// Kafka's consumer does the same per node (ShareConsumeRequestManager
// sends a node's acknowledgements only when no request to it is out);
// sending a ShareAcknowledge behind a fetch in flight instead would gain
// nothing: a broker answers a connection's requests in order, so its
// answer would wait for the fetch's anyway.
func (s *ShareConsumer) commitRound(ctx context.Context) error {
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	m := s.cl.meta.Load()
	asked := map[int32]bool{}
	var errs []error
	for {
		s.takeAnswers()
		free, owed := s.commitNodes(m, asked)
		for _, n := range free {
			asked[n] = true
		}
		if err := s.acknowledgeAll(ctx, m, free, false); err != nil {
			errs = append(errs, err)
		}
		if !owed {
			return errors.Join(errs...)
		}
		if err := s.waitAnswer(ctx); err != nil {
			return errors.Join(append(errs, err)...)
		}
	}
}

// commitNodes lists the leaders a commit asks now, sorted: those not in
// asked with no fetch in flight and acknowledgements pending or
// unconfirmed; owed says a leader still to ask has a fetch in flight.
// Called with sessMu held.
func (s *ShareConsumer) commitNodes(m *metadata, asked map[int32]bool) (free []int32, owed bool) {
	_, ackNodes := s.byLeader(m)
	for n, l := range s.leaders {
		if !l.inflight && l.unconfirmed && l.epoch != 0 {
			ackNodes[n] = true
		}
		if l.inflight && l.owed && !asked[n] {
			owed = true
		}
	}
	for n := range ackNodes {
		if asked[n] {
			continue
		}
		if l := s.leaders[n]; l != nil && l.inflight {
			owed = true
			continue
		}
		free = append(free, n)
	}
	slices.Sort(free)
	return free, owed
}

// acknowledgeAll runs acknowledgeTo for every node at once and waits for
// them; a single one runs on the caller's goroutine. Called with sessMu
// held; no node may have a fetch in flight.
func (s *ShareConsumer) acknowledgeAll(ctx context.Context, m *metadata, nodes []int32, final bool) error {
	for _, n := range nodes {
		s.leader(n) // made here so the goroutines below only read the map
	}
	errs := make([]error, len(nodes))
	if len(nodes) == 1 {
		return s.acknowledgeTo(ctx, m, nodes[0], final)
	}
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = s.acknowledgeTo(ctx, m, n, final) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// launch sends p on a goroutine of its own; its answer lands in answers,
// its records in buffered (together, so records are never handed out
// before their leader is free again). The fetch has the consumer's
// context, not the Poll's: it may outlive the Poll, and cancelling it
// would leave what it acquired locked until the acquisition lock times
// out. Called with sessMu held.
func (s *ShareConsumer) launch(m *metadata, p shareFetchPlan, parts []shareTP) {
	l := s.leader(p.node)
	acks := s.takeAcks(m, p.node)
	l.asked = time.Now()
	l.inflight, l.reserved, l.waits = true, p.maxRecords, p.maxWait > 0
	l.owed = l.unconfirmed || len(acks) > 0
	s.fetches.Add(1)
	go func() {
		defer s.fetches.Done()
		recs, err := s.fetchFrom(s.fetchCtx, m, p, l, parts, acks)
		s.mu.Lock()
		s.buffered = append(s.buffered, recs...)
		s.answers = append(s.answers, shareAnswer{node: p.node, n: len(recs), err: err})
		s.mu.Unlock()
		poke(s.answered)
	}()
}

// takeAnswers takes the answers of the fetches that came back: their
// leaders are free again, and their errors wait in fetchErrs for the next
// Poll. expired: a fetch that could wait came back empty. Called with
// sessMu held.
func (s *ShareConsumer) takeAnswers() (got int, expired bool) {
	s.mu.Lock()
	answers := s.answers
	s.answers = nil
	s.mu.Unlock()
	for _, a := range answers {
		l := s.leaders[a.node]
		if a.n == 0 && a.err == nil && l.waits {
			expired = true
		}
		l.inflight, l.reserved, l.waits, l.owed = false, 0, false, false
		got += a.n
		if a.err != nil {
			s.fetchErrs = append(s.fetchErrs, a.err)
		}
	}
	return got, expired
}

// takeFetchErrs returns, once, the errors of the fetches answered so far.
// Called with sessMu held.
func (s *ShareConsumer) takeFetchErrs() error {
	err := errors.Join(s.fetchErrs...)
	s.fetchErrs = nil
	return err
}

// waitAnswer returns once an answer is waiting to be taken, or ctx ended.
func (s *ShareConsumer) waitAnswer(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := len(s.answers)
		s.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-s.answered:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// settle waits until no fetch is in flight, taking their answers (their
// records stay buffered). Called with sessMu held.
func (s *ShareConsumer) settle(ctx context.Context) error {
	for {
		s.takeAnswers()
		if !s.anyInflight() {
			return nil
		}
		if err := s.waitAnswer(ctx); err != nil {
			return err
		}
	}
}

// anyInflight says whether a fetch is out; quickInflight whether one
// sent without a wait is. Called with sessMu held.
func (s *ShareConsumer) anyInflight() bool {
	for _, l := range s.leaders {
		if l.inflight {
			return true
		}
	}
	return false
}

func (s *ShareConsumer) quickInflight() bool {
	for _, l := range s.leaders {
		if l.inflight && !l.waits {
			return true
		}
	}
	return false
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

// roundState gathers what planShareFetches needs for nodes, the leaders
// with no fetch in flight, and budget records (the cap less what the
// fetches in flight may acquire, with record_limit) and, with
// record_limit, decides who the round serves: with hints, the leaders'
// backlogs to split the cap by when several have records and none the
// budget's worth, else the heaviest; without them (or when no backlog is
// known), the full leader served last, for up to shareStickRounds
// rounds, then the next full one. Called with sessMu held.
func (s *ShareConsumer) roundState(nodes []int32, idle bool, rotate, budget int) shareRound {
	r := shareRound{
		nodes: nodes, hot: make([]bool, len(nodes)), probe: make([]bool, len(nodes)), target: -1,
		maxPollRecords: budget, recordLimit: s.cfg.recordLimit, probeHot: s.cfg.backlogHints,
		idle: idle, maxWait: s.cfg.fetchMaxWait, rotate: rotate,
	}
	now := time.Now()
	cur := -1
	full := make([]bool, len(nodes))
	for i, n := range nodes {
		l := s.leaders[n]
		r.hot[i] = l != nil && l.hadData
		full[i] = l != nil && l.full
		r.probe[i] = l == nil || now.Sub(l.asked) >= shareProbeEvery
		if n == s.target {
			cur = i
		}
	}
	if !s.cfg.recordLimit {
		return r
	}
	if s.cfg.backlogHints {
		// One leader with a round's worth waiting fills the cap alone
		// (one request a round: a deep backlog drains fastest so);
		// smaller backlogs on several leaders share the round.
		backlog, waiting, most := make([]int64, len(nodes)), 0, int64(0)
		for i, n := range nodes {
			if l := s.leaders[n]; l != nil && l.knows && l.backlog > 0 {
				backlog[i] = l.backlog
				waiting++
				most = max(most, l.backlog)
			}
		}
		if waiting > 1 && most < int64(budget) {
			r.backlog = backlog
			return r
		}
	}
	if j, ok := s.heaviest(nodes, cur); ok {
		if j != cur {
			s.target, s.stick = nodes[j], 0
		}
		s.stick++
		r.target = j
		return r
	}
	// A leader that gave less than it was asked for has nothing more
	// right now: the round turns to one that filled its fetch, and when
	// none did, asks every leader (its records trickle in everywhere).
	if cur >= 0 && r.hot[cur] && full[cur] && s.stick < shareStickRounds {
		r.target = cur
		s.stick++
		return r
	}
	for k := 1; k <= len(nodes); k++ {
		j := (max(cur, 0) + k) % len(nodes)
		if cur < 0 {
			j = k - 1
		}
		if r.hot[j] && full[j] {
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

// fetchFrom sends one ShareFetch to p.node, whose session is l, for
// parts, with acks, the pending acknowledgements of the partitions it
// leads (launch took them), and returns what it acquired. It runs on the
// fetch's goroutine (launch), which owns l until its answer is taken.
func (s *ShareConsumer) fetchFrom(ctx context.Context, m *metadata, p shareFetchPlan, l *shareLeader, parts []shareTP, acks map[shareTP]ackRuns) ([]*ShareRecord, error) {
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
		return nil, err
	}
	raw, err := conn.Do(ctx, req, s.cfg.requestTimeout+p.maxWait)
	if err != nil {
		s.restoreAcks(acks)
		s.lost(p.node, l) // the broker may or may not have seen it
		return nil, err
	}
	resp := raw.(*kmsg.ShareFetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		s.restoreAcks(acks)
		if isSessionErr(err) {
			s.lost(p.node, l)
			return nil, nil
		}
		return nil, fmt.Errorf("client: share fetch from node %d: %w", p.node, err)
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
	var out []*ShareRecord
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
			out = append(out, recs...)
		}
	}
	l.hadData = len(out) > 0
	l.full = len(out) >= int(p.maxRecords)
	return out, errors.Join(errs...)
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
