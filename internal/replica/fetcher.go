package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
)

// FetchVersion is the Fetch version followers send: v17, as Kafka 4.x
// brokers do (v15+ carries ReplicaState, v12+ LastFetchedEpoch and
// DivergingEpoch, v13+ topic ids).
const FetchVersion = 17

// ListOffsetsVersion is the ListOffsets version a follower uses to find
// the leader's log end and start after OFFSET_OUT_OF_RANGE.
const ListOffsetsVersion = 7

// Defaults of Kafka's replica fetcher settings.
const (
	DefaultFetchMaxWait          = 500 * time.Millisecond // replica.fetch.wait.max.ms
	DefaultFetchMinBytes         = 1                      // replica.fetch.min.bytes
	DefaultFetchMaxBytes         = 10 << 20               // replica.fetch.response.max.bytes
	DefaultFetchPartitionMaxByte = 1 << 20                // replica.fetch.max.bytes
	DefaultFetchBackoff          = 50 * time.Millisecond  // replica.fetch.backoff.ms (Kafka: 1 s, which stalls acks=all for a second after every leader move)
)

// Transport sends one request to a broker and returns its response. The
// broker implements it over its inter-broker connections; tests plug in an
// in-process leader. Send must return when ctx ends.
type Transport interface {
	Send(ctx context.Context, brokerID int32, req kmsg.Request) (kmsg.Response, error)
}

// ManagerConfig configures the follower fetchers of one broker.
type ManagerConfig struct {
	LocalID     int32
	BrokerEpoch int64 // ReplicaState.ReplicaEpoch (KIP-903)
	Transport   Transport
	// Zero values mean Kafka's defaults (the Default* constants).
	MaxWait           time.Duration
	MinBytes          int32
	MaxBytes          int32
	PartitionMaxBytes int32
	Backoff           time.Duration
	Logger            *slog.Logger
}

// Follow is one partition to replicate: the local replica (already
// switched with BecomeFollower) and the leader and leader epoch the
// metadata names.
type Follow struct {
	Replica     *Replica
	Leader      int32
	LeaderEpoch int32
}

// orDefault replaces a zero or negative setting with its default.
func orDefault[T int32 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// partitionKey names a partition in a fetcher's session: its topic id
// and number.
type partitionKey = fetchsession.Key[[16]byte]

func keyOf(r *Replica) partitionKey {
	return partitionKey{Topic: r.TopicID(), Partition: r.Partition()}
}

// Manager owns one fetcher goroutine per source leader broker; each
// fetches, in one Fetch request, every partition this broker follows from
// that leader. AddPartitions and RemovePartitions change the sets as
// metadata changes; Close stops every fetcher and waits for it.
type Manager struct {
	cfg    ManagerConfig
	logger *slog.Logger

	mu sync.Mutex
	// fetchers holds one fetcher per leader; a replica is in at most one
	// (found by asking each: a broker has few leaders to fetch from, and
	// the replica keeps no note of it).
	fetchers map[int32]*fetcher
	closed   bool
}

// NewManager returns a Manager with no partitions.
func NewManager(cfg ManagerConfig) *Manager {
	orDefault(&cfg.MaxWait, DefaultFetchMaxWait)
	orDefault(&cfg.MinBytes, DefaultFetchMinBytes)
	orDefault(&cfg.MaxBytes, DefaultFetchMaxBytes)
	orDefault(&cfg.PartitionMaxBytes, DefaultFetchPartitionMaxByte)
	orDefault(&cfg.Backoff, DefaultFetchBackoff)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, logger: logger, fetchers: map[int32]*fetcher{}}
}

// AddPartitions starts replicating each partition from its leader, moving
// it from the fetcher of a previous leader if any. A partition already
// fetched from the same leader takes the new leader epoch, which also
// resumes it after FENCED_LEADER_EPOCH. Partitions with no leader (-1) or
// led by this broker are only removed from their old fetcher. Each
// fetcher takes its share in one step (and interrupts its request in
// flight at most once).
func (m *Manager) AddPartitions(fs []Follow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	byLeader := map[int32][]Follow{}
	for _, f := range fs {
		m.removeLocked(f.Replica, f.Leader)
		if f.Leader < 0 || f.Leader == m.cfg.LocalID {
			continue
		}
		byLeader[f.Leader] = append(byLeader[f.Leader], f)
	}
	for leader, follows := range byLeader {
		ft := m.fetchers[leader]
		if ft == nil {
			ft = m.startFetcher(leader)
		}
		ft.add(follows)
	}
}

// RemovePartitions stops replicating the partitions (the replica became
// leader, or was deleted). When it returns, no fetcher appends to them any
// more.
func (m *Manager) RemovePartitions(rs []*Replica) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		m.removeLocked(r, -1)
	}
}

// removeLocked takes r from the fetcher that has it, unless that is the
// fetcher of leader keep; a fetcher left with nothing stops. m.mu held.
func (m *Manager) removeLocked(r *Replica, keep int32) {
	k := keyOf(r)
	for leader, ft := range m.fetchers {
		if leader == keep {
			continue
		}
		if left, had := ft.remove(k, r); had {
			if left == 0 {
				delete(m.fetchers, leader)
				ft.stop()
			}
			return
		}
	}
}

// Leaders returns, for tests and metrics, how many partitions each
// fetcher has.
func (m *Manager) Leaders() map[int32]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[int32]int{}
	for id, ft := range m.fetchers {
		ft.mu.Lock()
		out[id] = ft.session.Len()
		ft.mu.Unlock()
	}
	return out
}

// Close stops every fetcher and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	fs := m.fetchers
	m.fetchers = map[int32]*fetcher{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
}

func (m *Manager) startFetcher(leader int32) *fetcher {
	ctx, cancel := context.WithCancel(context.Background())
	f := m.newFetcher(leader)
	f.cancel = cancel
	m.fetchers[leader] = f
	go f.run(ctx)
	return f
}

// newFetcher returns a fetcher from leader with no goroutine yet.
func (m *Manager) newFetcher(leader int32) *fetcher {
	f := &fetcher{
		m:        m,
		leader:   leader,
		logger:   m.logger.With("leader", leader),
		session:  fetchsession.NewClient[[16]byte, fetchPartition](),
		applying: map[partitionKey]bool{},
		kick:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	f.idle = sync.NewCond(&f.mu)
	return f
}

// fetcher replicates every partition this broker follows from one leader,
// in a fetch session (KIP-227): once the session is open, a request names
// only the partitions whose fetch position changed (after an append, a
// truncation, a new leader epoch) and those to forget, and the leader
// answers only the partitions with something new, so an idle fetcher's
// requests name nothing. Its goroutine is the only writer of those
// partitions' logs; mu guards the session's partition set, which the
// Manager changes.
type fetcher struct {
	m      *Manager
	leader int32
	logger *slog.Logger

	mu      sync.Mutex
	session *fetchsession.Client[[16]byte, fetchPartition]
	// added are partitions whose start the goroutine has not checked
	// yet (each as of its add: its gen); delayed, partitions backing off
	// (paused in the session).
	added   []addedPartition
	delayed []partitionKey
	gen     uint32 // bumped by every add: a partition's fetchPartition.gen
	// fenced holds the partitions answered FENCED_LEADER_EPOCH (paused
	// until metadata names a newer epoch), each with its gen then: a
	// later add of the partition ends it. Made by the first fencing.
	fenced map[partitionKey]uint32
	// delays are the back-offs of the partitions in delayed.
	delays map[partitionKey]time.Time
	// applying holds the partition the goroutine is applying a response
	// to; remove waits on idle for it to finish so that no append follows
	// RemovePartitions.
	applying map[partitionKey]bool
	idle     *sync.Cond

	// interrupt ends the request in flight (nil when none). An add
	// interrupts it only where waiting for it would matter: a partition
	// the session holds taking a new leader epoch, replica or fencing
	// (the answer in flight was asked for the old one), or one with
	// records joining (a leadership move: its leader may hold acks=all
	// produces until this follower fetches, and the leader may hold the
	// request parked up to MaxWait). The interrupted request's answer is
	// lost, so the next request is full. A never-written partition joins
	// the next request instead: creating partitions a few at a time does
	// not turn every request into a full one. mu guards it.
	interrupt context.CancelFunc
	// changes counts interrupting adds and builtAt is its value when the
	// last request was built, so that a request built before such an add
	// is interrupted even when the add came before the request was sent,
	// and an answer that arrived before it is not applied after it.
	changes, builtAt uint64
	// builtGen is gen when the last request was built: an answered
	// partition added since (its gen later) was answered for what the
	// partition was before, and is not applied.
	builtGen uint32

	kick   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// fetchPartition is a fetcher's view of one partition (16 bytes: a
// follower holds one per partition it follows, in its session's
// table).
type fetchPartition struct {
	r           *Replica
	leaderEpoch int32
	gen         uint32 // the fetcher's gen when added
}

// addedPartition is a partition added at gen whose start the goroutine
// has not checked yet: a log with batches but no epochs cannot find a
// divergence point from the leader, so it first truncates to its high
// watermark (Kafka's rule for followers without epoch information).
type addedPartition struct {
	k   partitionKey
	gen uint32
}

// isFenced reports whether k, as p, waits for newer metadata after
// FENCED_LEADER_EPOCH. mu held.
func (f *fetcher) isFenced(k partitionKey, p *fetchPartition) bool {
	gen, ok := f.fenced[k]
	return ok && gen == p.gen
}

// want puts p's current fetch position in the session (the next request
// names it if it changed). mu held.
func (f *fetcher) want(k partitionKey, p *fetchPartition) {
	offset, lastEpoch := p.r.fetchPosition()
	f.session.Want(k, fetchsession.PartitionData{
		FetchOffset: offset, LogStartOffset: p.r.log().StartOffset(), MaxBytes: f.m.cfg.PartitionMaxBytes,
		LeaderEpoch: p.leaderEpoch, LastFetchedEpoch: lastEpoch,
	})
}

func (f *fetcher) add(fs []Follow) {
	f.mu.Lock()
	changed, interrupt := false, false
	for _, fl := range fs {
		k := keyOf(fl.Replica)
		if sp := f.session.Get(k); sp != nil {
			if p := &sp.Value; p.r == fl.Replica && p.leaderEpoch >= fl.LeaderEpoch && !f.isFenced(k, p) {
				continue
			}
			interrupt = true
		} else if l := fl.Replica.log(); l.EndOffset() > l.StartOffset() {
			interrupt = true
		}
		f.gen++
		sp := f.session.Add(k, fetchPartition{})
		sp.Value = fetchPartition{r: fl.Replica, leaderEpoch: fl.LeaderEpoch, gen: f.gen}
		delete(f.fenced, k)
		f.added = append(f.added, addedPartition{k, f.gen})
		f.want(k, &sp.Value)
		changed = true
	}
	if interrupt {
		f.changes++
		if f.interrupt != nil {
			f.interrupt()
			f.interrupt = nil
		}
	}
	f.mu.Unlock()
	if changed {
		f.wake()
	}
}

// remove drops k, waiting for an application of a response to it to
// finish, and returns how many partitions are left.
// remove takes r (named k) from the fetcher, if it has it, and returns
// how many partitions it has left.
func (f *fetcher) remove(k partitionKey, r *Replica) (left int, had bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.session.Get(k); p == nil || p.Value.r != r {
		return f.session.Len(), false
	}
	f.session.Delete(k)
	delete(f.fenced, k)
	for f.applying[k] {
		f.idle.Wait()
	}
	return f.session.Len(), true
}

func (f *fetcher) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

func (f *fetcher) run(ctx context.Context) {
	defer close(f.done)
	f.logger.Info("replica: fetcher started")
	defer f.logger.Info("replica: fetcher stopped")
	for ctx.Err() == nil {
		f.truncateEpochless()
		req, pl, wait := f.buildRequest()
		if req == nil {
			f.sleep(ctx, wait)
			continue
		}
		resp, err := f.send(ctx, req)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errInterrupted) {
			// Partitions were added: ask again with them at once. Whether
			// the leader saw the interrupted request is unknown, so the
			// next one is full.
			f.failed()
			continue
		}
		if err == nil {
			fr, ok := resp.(*kmsg.FetchResponse)
			if !ok {
				err = fmt.Errorf("replica: fetch answered with %T", resp)
			} else if f.handleResponse(ctx, pl, fr); fr.ErrorCode == 0 || sessionError(fr.ErrorCode) {
				// A session error makes the next request full, at once.
				continue
			} else {
				err = kerr.ErrorForCode(fr.ErrorCode)
			}
		} else {
			f.failed()
		}
		f.logger.Warn("replica: fetch failed; backing off", "err", err)
		f.sleep(ctx, f.m.cfg.Backoff)
	}
}

// sessionError reports whether a Fetch's top-level error is about its
// fetch session (the session moves on; nothing to back off from).
func sessionError(code int16) bool {
	return code == kerr.FetchSessionIDNotFound.Code || code == kerr.InvalidFetchSessionEpoch.Code || code == kerr.FetchSessionTopicIDError.Code
}

// failed makes the next request full: the last one got no answer.
func (f *fetcher) failed() {
	f.mu.Lock()
	f.session.Failed()
	f.mu.Unlock()
}

// errInterrupted is send's error when add ended the request.
var errInterrupted = errors.New("replica: fetch interrupted by a partition change")

// send sends one Fetch that add may interrupt. The interrupted request's
// answer is dropped with its connection (the transport closes a
// connection whose request was cancelled), so nothing of it is applied.
func (f *fetcher) send(ctx context.Context, req *kmsg.FetchRequest) (kmsg.Response, error) {
	rctx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	f.mu.Lock()
	if f.changes != f.builtAt {
		f.mu.Unlock()
		return nil, errInterrupted
	}
	f.interrupt = interrupt
	f.mu.Unlock()
	resp, err := f.m.cfg.Transport.Send(rctx, f.leader, req)
	f.mu.Lock()
	f.interrupt = nil
	f.mu.Unlock()
	if err != nil && ctx.Err() == nil && rctx.Err() != nil {
		return nil, errInterrupted
	}
	return resp, err
}

// truncateEpochless cuts newly added partitions whose log holds batches
// but whose epoch cache is empty to their high watermark before the first
// fetch.
func (f *fetcher) truncateEpochless() {
	type todo struct {
		k   partitionKey
		gen uint32
		p   fetchPartition
	}
	f.mu.Lock()
	var check []todo
	for _, a := range f.added {
		if sp := f.session.Get(a.k); sp != nil && sp.Value.gen == a.gen {
			check = append(check, todo{a.k, a.gen, sp.Value})
		}
	}
	f.added = nil // not kept: a burst of adds (a topic creation) would hold its capacity
	f.mu.Unlock()
	for _, c := range check {
		r := c.p.r
		if _, ok := r.cache.Latest(); ok || r.log().EndOffset() <= r.log().StartOffset() || !f.begin(c.k, c.gen) {
			continue
		}
		if err := r.truncateTo(c.p.leaderEpoch, r.HighWatermark()); err != nil {
			f.logger.Warn("replica: truncation to the high watermark failed", "topic", r.Topic(), "partition", r.Partition(), "err", err)
		}
		f.mu.Lock()
		if sp := f.session.Get(c.k); sp != nil && sp.Value.gen == c.gen && sp.Wanted() {
			f.want(c.k, &sp.Value)
		}
		f.mu.Unlock()
		f.end(c.k)
	}
}

// sleep waits for a partition change, the end of the nearest back-off, or
// ctx.
func (f *fetcher) sleep(ctx context.Context, wait time.Duration) {
	var timer <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
	case <-f.kick:
	case <-timer:
	}
}

// buildRequest makes the next Fetch of the session. Partitions whose
// back-off ended are fetched again first. With nothing to fetch it
// returns nil and how long until a back-off ends (0: until a change).
func (f *fetcher) buildRequest() (*kmsg.FetchRequest, fetchsession.Plan[partitionKey], time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.builtAt, f.builtGen = f.changes, f.gen
	cfg := &f.m.cfg
	now := time.Now()
	var wait time.Duration
	still := f.delayed[:0]
	for _, k := range f.delayed {
		sp := f.session.Get(k)
		if sp == nil || sp.Wanted() || f.isFenced(k, &sp.Value) {
			continue
		}
		if d := f.delays[k].Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			still = append(still, k)
			continue
		}
		delete(f.delays, k)
		f.want(k, &sp.Value)
	}
	f.delayed = still
	if f.session.Wanted() == 0 {
		return nil, fetchsession.Plan[partitionKey]{}, wait
	}
	pl := f.session.Next()
	req := kmsg.NewPtrFetchRequest()
	req.Version = FetchVersion
	req.ReplicaID = cfg.LocalID
	req.ReplicaState.ID = cfg.LocalID
	req.ReplicaState.Epoch = cfg.BrokerEpoch
	req.MaxWaitMillis = int32(cfg.MaxWait / time.Millisecond)
	req.MinBytes = cfg.MinBytes
	req.MaxBytes = cfg.MaxBytes
	b := fetchsession.NewRequestBuilder(req, pl)
	for _, k := range pl.Send {
		sp := f.session.Get(k)
		b.Add(fetchsession.TopicRef{ID: k.Topic, Name: sp.Value.r.Topic()}, k.Partition, f.session.Data(sp))
	}
	for _, k := range pl.Forget {
		b.Forget(fetchsession.TopicRef{ID: k.Topic}, k.Partition)
	}
	return req, pl, 0
}

// delay backs off the partitions keys: they leave the session until
// their back-off ends.
func (f *fetcher) delay(keys []partitionKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	until := time.Now().Add(f.m.cfg.Backoff)
	for _, k := range keys {
		sp := f.session.Get(k)
		if sp == nil || !sp.Wanted() {
			continue
		}
		if f.delays == nil {
			f.delays = map[partitionKey]time.Time{}
		}
		f.delays[k] = until
		f.session.Pause(k)
		f.delayed = append(f.delayed, k)
	}
}

// begin marks k as being applied unless it was removed or replaced since
// (its gen changed).
func (f *fetcher) begin(k partitionKey, gen uint32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sp := f.session.Get(k); sp == nil || sp.Value.gen != gen {
		return false
	}
	f.applying[k] = true
	return true
}

func (f *fetcher) end(k partitionKey) {
	f.mu.Lock()
	delete(f.applying, k)
	f.idle.Broadcast()
	f.mu.Unlock()
}

// handleResponse applies an answer to the request of pl and reports
// whether it was used. An answer with a session error, or one the
// session cannot place, is not (the next request is full); one that came
// after an interrupting add is dropped too (the session changed under
// it). A partition added since the request was built that the answer
// carries anyway (one removed and added back) is not applied, and the
// next request is full: the leader's session believes it told the
// follower what that answer held.
func (f *fetcher) handleResponse(ctx context.Context, pl fetchsession.Plan[partitionKey], resp *kmsg.FetchResponse) bool {
	var keys []partitionKey
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			keys = append(keys, partitionKey{Topic: t.TopicID, Partition: t.Partitions[j].Partition})
		}
	}
	type item struct {
		k  partitionKey
		p  fetchPartition
		rp *kmsg.FetchResponseTopicPartition
	}
	f.mu.Lock()
	if f.changes != f.builtAt {
		f.session.Failed()
		f.mu.Unlock()
		return true
	}
	if !f.session.Answered(pl, resp.ErrorCode, resp.SessionID, keys) {
		f.mu.Unlock()
		return false
	}
	var items []item
	n := 0
	for i := range resp.Topics {
		t := &resp.Topics[i]
		for j := range t.Partitions {
			k := keys[n]
			n++
			sp := f.session.Get(k)
			if sp == nil || !sp.Wanted() {
				continue // removed or backing off since
			}
			if int32(sp.Value.gen-f.builtGen) > 0 {
				f.session.Failed()
				continue
			}
			items = append(items, item{k, sp.Value, &t.Partitions[j]})
		}
	}
	f.mu.Unlock()
	var backoff []partitionKey
	for _, it := range items {
		if !f.begin(it.k, it.p.gen) {
			continue
		}
		err := f.apply(ctx, it.p, it.rp)
		f.mu.Lock()
		if sp := f.session.Get(it.k); sp != nil && sp.Value.gen == it.p.gen && sp.Wanted() {
			if err != nil {
				f.logger.Debug("replica: partition fetch failed; backing off", "topic", it.p.r.Topic(), "partition", it.k.Partition, "err", err)
				backoff = append(backoff, it.k)
			} else if !f.isFenced(it.k, &sp.Value) {
				f.want(it.k, &sp.Value)
			}
		}
		f.mu.Unlock()
		f.end(it.k)
	}
	if backoff != nil {
		f.delay(backoff)
	}
	return true
}

// apply handles one partition of a Fetch response. An error backs the
// partition off.
func (f *fetcher) apply(ctx context.Context, p fetchPartition, rp *kmsg.FetchResponseTopicPartition) error {
	r, epoch := p.r, p.leaderEpoch
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		return f.resetOutOfRange(ctx, p)
	case errors.Is(err, kerr.UnknownLeaderEpoch):
		// The leader has not applied the metadata that made it leader in
		// this epoch yet. A weir leader holds such a fetch until it does
		// (or MaxWait passes), so asking again at once does not spin, and
		// the first fetch of the new epoch is not a back-off late.
		return nil
	case errors.Is(err, kerr.FencedLeaderEpoch):
		// The leader is in a newer epoch than this broker knows: wait for
		// the metadata to catch up (AddPartitions with the new epoch).
		f.mu.Lock()
		if sp := f.session.Get(keyOf(r)); sp != nil && sp.Value.gen == p.gen {
			if f.fenced == nil {
				f.fenced = map[partitionKey]uint32{}
			}
			f.fenced[keyOf(r)] = p.gen
			f.session.Pause(keyOf(r))
		}
		f.mu.Unlock()
		f.logger.Debug("replica: fenced by the leader; waiting for metadata", "topic", r.Topic(), "partition", r.Partition(), "epoch", epoch)
		return nil
	default:
		return err
	}
	if div := (EpochEntryEnd{rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset}); div.Diverged() {
		return r.truncateToDivergence(epoch, div)
	}
	return r.appendFromLeader(epoch, rp.RecordBatches, rp.HighWatermark, rp.LogStartOffset)
}

// resetOutOfRange is Kafka's answer to OFFSET_OUT_OF_RANGE: when the
// leader's log ends below ours, truncate to its end (what is past it was
// never committed); otherwise our log ends below the leader's start, and
// the log must restart at the leader's start offset.
func (f *fetcher) resetOutOfRange(ctx context.Context, p fetchPartition) error {
	r, epoch := p.r, p.leaderEpoch
	leaderEnd, err := f.listOffset(ctx, r, epoch, -1)
	if err != nil {
		return err
	}
	leo := r.log().EndOffset()
	if leaderEnd < leo {
		f.logger.Warn("replica: leader's log ends below ours; truncating", "topic", r.Topic(), "partition", r.Partition(), "leader_end", leaderEnd, "leo", leo)
		return r.truncateTo(epoch, leaderEnd)
	}
	leaderStart, err := f.listOffset(ctx, r, epoch, -2)
	if err != nil {
		return err
	}
	if leaderStart > leo {
		f.logger.Warn("replica: leader's log starts past ours; restarting the log there", "topic", r.Topic(), "partition", r.Partition(), "leader_start", leaderStart, "leo", leo)
		return r.truncateFullyAndStartAt(epoch, leaderStart)
	}
	return nil // in range again (the leader moved): fetch again
}

// listOffset asks the leader for its log end (-1, LEO for a replica id)
// or start (-2) offset.
func (f *fetcher) listOffset(ctx context.Context, r *Replica, epoch int32, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = ListOffsetsVersion
	req.ReplicaID = f.m.cfg.LocalID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = r.Topic()
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = r.Partition()
	p.CurrentLeaderEpoch = epoch
	p.Timestamp = ts
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := f.m.cfg.Transport.Send(ctx, f.leader, req)
	if err != nil {
		return 0, err
	}
	lr, ok := resp.(*kmsg.ListOffsetsResponse)
	if !ok || len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("replica: malformed ListOffsets answer %T", resp)
	}
	rp := lr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, err
	}
	return rp.Offset, nil
}
