package txn

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// IDSource hands out producer ids never handed out before. The broker's
// producer.Allocator is one; it may block while it reserves a block.
type IDSource interface {
	NextID() (int64, error)
}

// Config configures a Partition. Zero fields take Kafka's defaults.
type Config struct {
	// MaxTimeoutMs is transaction.max.timeout.ms (900000): a producer
	// asking for a longer transaction.timeout.ms gets
	// INVALID_TRANSACTION_TIMEOUT.
	MaxTimeoutMs int32
	// ExpirationMs is transactional.id.expiration.ms (604800000, 7 days):
	// how long a transactional id with no transaction open lives without
	// a request.
	ExpirationMs int64
	// Version is the cluster's transaction.version (2). Aborts the
	// coordinator starts itself (timeouts, fencing) follow it, and it
	// picks the record encoding (1+: flexible values).
	Version Version
	// IDs is required: where new producer ids come from.
	IDs IDSource
}

// Defaults of the Kafka configs.
const (
	DefaultMaxTimeoutMs = 900_000
	DefaultExpirationMs = 7 * 24 * 3600 * 1000
)

func (c Config) withDefaults() Config {
	if c.MaxTimeoutMs <= 0 {
		c.MaxTimeoutMs = DefaultMaxTimeoutMs
	}
	if c.ExpirationMs <= 0 {
		c.ExpirationMs = DefaultExpirationMs
	}
	if c.Version == 0 {
		c.Version = V2
	}
	return c
}

// Ref identifies a request whose answer a Partition owes. The caller picks
// it; 0 means nobody waits for an answer.
type Ref uint64

// Answer is a request's answer: the error code, and for InitProducerId
// (and EndTxn under transaction version 2) the producer id and epoch.
type Answer struct {
	Ref           Ref
	Code          int16
	ProducerID    int64
	ProducerEpoch int16
}

// Record is one __transaction_state record; a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
}

// Write is records the owner must append to this partition and wait to be
// committed (acks=all), then report with Appended. Writes are issued in
// order and must be appended in that order.
type Write struct {
	ID      uint64
	Records []Record
	// Retry marks a write that failed for want of replicas and is tried
	// again: the owner should wait a moment before appending it.
	Retry bool
}

// Markers asks the owner to write a transaction marker to each partition
// (WriteTxnMarkers to each partition's leader) and to report every
// partition's outcome with MarkersWritten.
type Markers struct {
	TransactionalID  string
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	Version          Version
	Partitions       []TopicPartition
	// Retry marks partitions whose marker failed and is sent again: the
	// owner should wait a moment (and look up their leaders again).
	Retry bool
}

// MarkerResult is one partition's outcome of a marker: the error code of
// WriteTxnMarkers, or Deleted when the partition no longer exists (its
// marker is not needed).
type MarkerResult struct {
	Partition TopicPartition
	Code      int16
	Deleted   bool
}

// EventKind names a transition users care about; the owner counts them
// (metrics) and logs them.
type EventKind int8

const (
	// EventCommitted: a transaction completed (CompleteCommit written).
	EventCommitted EventKind = iota
	// EventAborted: a transaction completed (CompleteAbort written).
	EventAborted
	// EventTimedOut: an Ongoing transaction outlived its
	// transaction.timeout.ms; it is being aborted, its producer fenced.
	EventTimedOut
	// EventFenced: InitProducerId found a transaction open; it is being
	// aborted, its producer fenced.
	EventFenced
	// EventExpired: a transactional id expired (its tombstone written).
	EventExpired
	// NumEventKinds is the number of kinds.
	NumEventKinds
)

var eventNames = [NumEventKinds]string{"txn_committed", "txn_aborted", "txn_timed_out", "txn_fenced", "txn_id_expired"}

// String is the event's metric and log name.
func (k EventKind) String() string {
	if k >= 0 && k < NumEventKinds {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int8(k))
}

// Event is one transition of one transactional id.
type Event struct {
	Kind            EventKind
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
}

// Output is what a call asks of the owner: answers to deliver, records to
// append and markers to send, and the events to count.
type Output struct {
	Answers []Answer
	Writes  []Write
	Markers []Markers
	Events  []Event
}

func (o *Output) event(k EventKind, t *txn) {
	o.Events = append(o.Events, Event{Kind: k, TransactionalID: t.id, ProducerID: t.producerID, ProducerEpoch: t.epoch})
}

// code answers with an error code (or NONE) and no producer id.
func (o *Output) code(ref Ref, code int16) { o.answer(ref, code, NoProducerID, NoProducerEpoch) }

func (o *Output) answer(ref Ref, code int16, pid int64, epoch int16) {
	if ref == 0 {
		return
	}
	if code != 0 {
		pid, epoch = NoProducerID, NoProducerEpoch
	}
	o.Answers = append(o.Answers, Answer{Ref: ref, Code: code, ProducerID: pid, ProducerEpoch: epoch})
}

// ProducerIDEpoch is the producer id and epoch an InitProducerId names
// (v3+, KIP-360), when it names them.
type ProducerIDEpoch struct {
	ProducerID int64
	Epoch      int16
}

// Partition is the coordinator state of one __transaction_state
// partition: every transactional id hashed to it. It is a pure state
// machine: requests, write completions, marker outcomes and ticks come
// in, with the time; answers, writes and markers come out. It has no
// lock; one goroutine owns it.
type Partition struct {
	cfg   Config
	index int32
	epoch int32 // the coordinator epoch: the partition's leader epoch

	txns map[string]*txn

	nextWrite uint64
	writes    map[uint64]pendingWrite
}

type pendingWrite struct {
	recs []Record
	then func(out *Output, code int16, now int64)
}

// NewPartition returns the empty state of partition index led at
// coordinator epoch epoch. Replay its records, then call Loaded.
func NewPartition(cfg Config, index, epoch int32) *Partition {
	return &Partition{
		cfg:    cfg.withDefaults(),
		index:  index,
		epoch:  epoch,
		txns:   make(map[string]*txn),
		writes: make(map[uint64]pendingWrite),
	}
}

// Index returns the __transaction_state partition.
func (p *Partition) Index() int32 { return p.index }

// Epoch returns the coordinator epoch.
func (p *Partition) Epoch() int32 { return p.epoch }

// Len returns the number of transactional ids held.
func (p *Partition) Len() int { return len(p.txns) }

// ErrIllegalState is a replayed record in a state Kafka never writes (Dead,
// PrepareEpochFence).
var ErrIllegalState = errors.New("txn: record in a state that is never written")

// Replay applies one record of the partition's log, in log order, while
// loading. Records that do not decode are skipped (the error says why);
// the state keeps the latest good record of each transactional id.
func (p *Partition) Replay(key, value []byte) error {
	id, err := DecodeKey(key)
	if err != nil {
		return err
	}
	if value == nil {
		delete(p.txns, id)
		return nil
	}
	v, err := DecodeValue(value)
	if err != nil {
		return fmt.Errorf("transactional id %q: %w", id, err)
	}
	if v.Status == Dead || v.Status == PrepareEpochFence {
		return fmt.Errorf("transactional id %q: %w: %s", id, ErrIllegalState, v.Status)
	}
	p.txns[id] = &txn{id: id, fields: fromValue(&v), pending: noState}
	return nil
}

// Loaded ends the load: every transaction found prepared is completed by
// sending its markers again (a coordinator may have died before they all
// landed). Ongoing transactions wait for their client or their timeout.
func (p *Partition) Loaded(now int64) Output {
	var out Output
	for _, id := range p.sortedIDs() {
		t := p.txns[id]
		if t.state.preparing() {
			p.sendMarkers(&out, t, now)
		}
	}
	return out
}

func (p *Partition) sortedIDs() []string {
	ids := make([]string, 0, len(p.txns))
	for id := range p.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// validTimeout is the transaction.timeout.ms check.
func (p *Partition) validTimeout(ms int32) bool { return ms > 0 && ms <= p.cfg.MaxTimeoutMs }

// nextID draws a producer id; a failure is answered with the error's
// Kafka code, or UNKNOWN_SERVER_ERROR.
func (p *Partition) nextID() (int64, int16) {
	id, err := p.cfg.IDs.NextID()
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return 0, ke.Code
		}
		return 0, kerr.UnknownServerError.Code
	}
	return id, 0
}

// InitProducerID answers InitProducerId for a transactional id: a new
// producer gets an id at epoch 0; one already known has its epoch bumped
// (fencing the previous producer), a new producer id once the epochs run
// out. An open transaction is aborted first, with the epoch bumped to
// fence its producer, and the request answered CONCURRENT_TRANSACTIONS so
// that the producer retries once the abort is done. expected is the
// producer id and epoch of a producer recovering under KIP-360, or nil.
func (p *Partition) InitProducerID(ref Ref, id string, timeoutMs int32, expected *ProducerIDEpoch, now int64) Output {
	var out Output
	switch {
	case id == "":
		out.code(ref, kerr.InvalidRequest.Code)
		return out
	case !p.validTimeout(timeoutMs):
		out.code(ref, kerr.InvalidTransactionTimeout.Code)
		return out
	}
	t := p.txns[id]
	if t == nil {
		pid, code := p.nextID()
		if code != 0 {
			out.code(ref, code)
			return out
		}
		t = &txn{id: id, pending: noState, fields: fields{
			producerID: pid, prevProducerID: NoProducerID, nextProducerID: NoProducerID,
			epoch: NoProducerEpoch, lastEpoch: NoProducerEpoch, timeoutMs: timeoutMs,
			state: Empty, parts: partSet{}, startMs: -1, updateMs: now, version: V0,
		}}
		p.txns[id] = t
	}
	validID := func(e *ProducerIDEpoch) bool {
		// The metadata was just created (a producer recovering from
		// UNKNOWN_PRODUCER_ID), the id is the current one (the epoch
		// is checked by the bump), or the previous one with an
		// exhausted epoch (a retry of a rotation whose answer was lost).
		return t.epoch == NoProducerEpoch || e.ProducerID == t.producerID ||
			(e.ProducerID == t.prevProducerID && epochExhausted(e.Epoch))
	}
	switch {
	case t.pending != noState:
		out.code(ref, kerr.ConcurrentTransactions.Code)
		return out
	case expected != nil && !validID(expected):
		out.code(ref, kerr.ProducerFenced.Code)
		return out
	}
	var tr transit
	var err error
	switch t.state {
	case PrepareCommit, PrepareAbort:
		out.code(ref, kerr.ConcurrentTransactions.Code)
		return out
	case Empty, CompleteCommit, CompleteAbort:
		if epochExhausted(t.epoch) && (expected == nil || expected.Epoch == t.epoch) {
			pid, code := p.nextID()
			if code != 0 {
				out.code(ref, code)
				return out
			}
			tr, err = t.prepareRotate(pid, timeoutMs, now, expected != nil)
		} else {
			var exp *int16
			if expected != nil {
				exp = &expected.Epoch
			}
			var code int16
			tr, code, err = t.prepareBump(timeoutMs, exp, now)
			if err == nil && code != 0 {
				out.code(ref, code)
				return out
			}
		}
	case Ongoing:
		// Fence the producer of the open transaction and abort it. The
		// fencing epoch is never handed out: the producer retries after
		// CONCURRENT_TRANSACTIONS and bumps once more, which also moves
		// to a new producer id if the fence used the last epoch.
		tr, err = t.prepareFence()
		if err != nil {
			break
		}
		out.event(EventFenced, t)
		p.end(&out, t.id, tr.producerID, tr.epoch, false, false, p.cfg.Version, now,
			func(out *Output, code int16, _ int64, _ int16) {
				if code == 0 {
					code = kerr.ConcurrentTransactions.Code
				}
				out.code(ref, code)
			})
		return out
	default:
		err = fmt.Errorf("%w: InitProducerId in state %s", errIllegal, t.state)
	}
	if err != nil {
		out.code(ref, kerr.UnknownServerError.Code)
		return out
	}
	p.write(&out, t, tr, false, func(out *Output, code int16, _ int64) {
		out.answer(ref, code, tr.producerID, tr.epoch)
	})
	return out
}

// AddPartitions answers AddPartitionsToTxn (and AddOffsetsToTxn, with the
// group's __consumer_offsets partition): the partitions join the
// transaction, which starts if none is open. v is the client's protocol:
// V0 for clients' AddPartitionsToTxn v0-3 and for AddOffsetsToTxn, V2
// for the implicit add a partition leader sends under KIP-890.
func (p *Partition) AddPartitions(ref Ref, id string, pid int64, epoch int16, parts []TopicPartition, v Version, now int64) Output {
	var out Output
	if id == "" {
		out.code(ref, kerr.InvalidRequest.Code)
		return out
	}
	t := p.txns[id]
	// Kafka 4.3 checks a transition in flight before the producer.
	switch {
	case t == nil:
		out.code(ref, kerr.InvalidProducerIDMapping.Code)
	case t.pending != noState:
		out.code(ref, kerr.ConcurrentTransactions.Code)
	case t.producerID != pid:
		out.code(ref, kerr.InvalidProducerIDMapping.Code)
	case t.epoch != epoch:
		out.code(ref, kerr.ProducerFenced.Code)
	case t.state.preparing():
		out.code(ref, kerr.ConcurrentTransactions.Code)
	case t.state == Ongoing && t.parts.containsAll(toSet(parts)):
		// Already in: nothing to write.
		out.code(ref, 0)
	default:
		tr, err := t.prepareAdd(parts, now, v)
		if err != nil {
			out.code(ref, kerr.UnknownServerError.Code)
			return out
		}
		p.write(&out, t, tr, false, func(out *Output, code int16, _ int64) {
			out.code(ref, code)
		})
	}
	return out
}

func toSet(parts []TopicPartition) partSet {
	s := make(partSet, len(parts))
	for _, tp := range parts {
		s[tp] = struct{}{}
	}
	return s
}

// Verify answers a partition leader's verify-only AddPartitionsToTxn
// (v4+): which of the partitions are in the open transaction. One not in
// it is TRANSACTION_ABORTABLE (the leader maps it to INVALID_TXN_STATE for
// producers that predate that code). It writes nothing.
func (p *Partition) Verify(id string, pid int64, epoch int16, parts []TopicPartition) []int16 {
	codes := make([]int16, len(parts))
	all := func(c int16) []int16 {
		for i := range codes {
			codes[i] = c
		}
		return codes
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	t := p.txns[id]
	switch {
	case t == nil || t.producerID != pid:
		return all(kerr.InvalidProducerIDMapping.Code)
	case t.epoch != epoch:
		return all(kerr.ProducerFenced.Code)
	case t.state.preparing():
		return all(kerr.ConcurrentTransactions.Code)
	}
	for i, tp := range parts {
		if _, ok := t.parts[tp]; !ok {
			codes[i] = kerr.TransactionAbortable.Code
		}
	}
	return codes
}

// EndTxn answers EndTxn. v is the client's protocol (V2 for EndTxn v5+);
// under V2 the answer carries the bumped producer epoch (and a new
// producer id when the epochs ran out).
func (p *Partition) EndTxn(ref Ref, id string, pid int64, epoch int16, commit bool, v Version, now int64) Output {
	var out Output
	p.end(&out, id, pid, epoch, commit, true, v, now, func(out *Output, code int16, pid int64, epoch int16) {
		out.answer(ref, code, pid, epoch)
	})
	return out
}

type endReply func(out *Output, code int16, pid int64, epoch int16)

// end moves a transaction to PrepareCommit or PrepareAbort for EndTxn, or
// to PrepareAbort when the coordinator aborts it itself (fromClient
// false: a timeout or a fencing InitProducerId, with the fencing epoch
// already pending).
func (p *Partition) end(out *Output, id string, pid int64, epoch int16, commit, fromClient bool, v Version, now int64, reply endReply) {
	if id == "" {
		reply(out, kerr.InvalidRequest.Code, NoProducerID, NoProducerEpoch)
		return
	}
	t := p.txns[id]
	if t == nil {
		reply(out, kerr.InvalidProducerIDMapping.Code, NoProducerID, NoProducerEpoch)
		return
	}
	if v.bumpsEpoch() {
		p.endV2(out, t, pid, epoch, commit, fromClient, v, now, reply)
	} else {
		p.endV1(out, t, pid, epoch, commit, fromClient, now, reply)
	}
}

// endState is the state EndTxn asks for.
func endState(commit bool) State {
	if commit {
		return PrepareCommit
	}
	return PrepareAbort
}

// stateMismatch answers EndTxn for a transaction already past the point
// it asks for: the same outcome completed or in progress is harmless, the
// other is INVALID_TXN_STATE.
func stateMismatch(s State, commit bool) int16 {
	switch {
	case s == CompleteCommit && commit, s == CompleteAbort && !commit:
		return 0
	case s == PrepareCommit && commit, s == PrepareAbort && !commit:
		return kerr.ConcurrentTransactions.Code
	}
	return kerr.InvalidTxnState.Code
}

// endV1 is EndTxn under the classic protocol: the epoch stays.
func (p *Partition) endV1(out *Output, t *txn, pid int64, epoch int16, commit, fromClient bool, now int64, reply endReply) {
	switch {
	case t.producerID != pid:
		reply(out, kerr.InvalidProducerIDMapping.Code, NoProducerID, NoProducerEpoch)
		return
	case (fromClient && epoch != t.epoch) || epoch < t.epoch:
		// A client may not change the epoch; the coordinator's own
		// abort carries the fencing epoch, one above.
		reply(out, kerr.ProducerFenced.Code, NoProducerID, NoProducerEpoch)
		return
	case t.pending != noState && t.pending != PrepareEpochFence:
		reply(out, kerr.ConcurrentTransactions.Code, NoProducerID, NoProducerEpoch)
		return
	}
	switch t.state {
	case Ongoing:
	case Dead, PrepareEpochFence:
		reply(out, kerr.UnknownServerError.Code, NoProducerID, NoProducerEpoch)
		return
	default:
		reply(out, stateMismatch(t.state, commit), NoProducerID, NoProducerEpoch)
		return
	}
	next := endState(commit)
	fence := next == PrepareAbort && t.pending == PrepareEpochFence
	if fence {
		t.takeFence(epoch)
	}
	tr, err := t.prepareEnd(next, V0, NoProducerID, now, false)
	if err != nil {
		reply(out, kerr.UnknownServerError.Code, NoProducerID, NoProducerEpoch)
		return
	}
	p.writeEnd(out, t, tr, pid, fence, func() bool { return t.epoch == epoch }, false, reply)
}

// takeFence makes a pending fencing epoch the transaction's epoch, in
// memory, whether or not the abort that follows gets written.
func (t *txn) takeFence(epoch int16) {
	t.pending = noState
	t.epoch = epoch
	t.lastEpoch = NoProducerEpoch
}

// writeEnd writes EndTxn's prepare record (or the coordinator's own
// abort). Once it is written it checks that the transaction is still the
// one it prepared (epochOK is the protocol's epoch check), asks for the
// markers and answers: without a producer id under the classic protocol,
// with the completion's id and epoch under version 2.
func (p *Partition) writeEnd(out *Output, t *txn, tr transit, pid int64, fence bool, epochOK func() bool, v2 bool, reply endReply) {
	next := tr.state
	p.write(out, t, tr, false, func(out *Output, code int16, now int64) {
		if code != 0 {
			if fence {
				t.failedFence = true
			}
			reply(out, code, NoProducerID, NoProducerEpoch)
			return
		}
		switch {
		case t.producerID != pid:
			code = kerr.InvalidProducerIDMapping.Code
		case !epochOK():
			code = kerr.ProducerFenced.Code
		case t.pending != noState:
			code = kerr.ConcurrentTransactions.Code
		case t.state != next:
			code = kerr.InvalidTxnState.Code
		}
		if code == 0 && !p.sendMarkers(out, t, now) {
			code = kerr.UnknownServerError.Code
		}
		switch {
		case code != 0:
			reply(out, code, NoProducerID, NoProducerEpoch)
		case v2:
			// The producer continues with the completed state's id
			// and epoch: the bumped epoch, or epoch 0 of its next
			// producer id.
			c := t.markers.complete
			reply(out, 0, c.producerID, c.epoch)
		default:
			reply(out, 0, NoProducerID, NoProducerEpoch)
		}
	})
}

// endV2 is EndTxn under transaction version 2: every EndTxn bumps the
// epoch, so a retried EndTxn is told apart from the next transaction's by
// its epoch being one below the coordinator's, and an abort is accepted
// with no transaction open (the producer may not know whether its last
// one completed).
func (p *Partition) endV2(out *Output, t *txn, pid int64, epoch int16, commit, fromClient bool, v Version, now int64, reply endReply) {
	fence := t.pending == PrepareEpochFence
	cur, req := int32(t.epoch), int32(epoch)
	retryOverflow := !fence && t.prevProducerID == pid && epoch == math.MaxInt16-1 && t.epoch == 0
	retryBump := !fence && cur == req+1
	var validEpoch bool
	switch {
	case fence:
		validEpoch = (!fromClient || req == cur) && req >= cur
	case t.state.preparing():
		validEpoch = retryBump
	case t.state == CompleteCommit || t.state == CompleteAbort:
		validEpoch = retryBump || retryOverflow || req == cur
	default:
		validEpoch = req == cur
	}
	retry := retryBump || retryOverflow
	// Unlike the classic path, a transition in flight is checked first.
	switch {
	case t.pending != noState && t.pending != PrepareEpochFence:
		reply(out, kerr.ConcurrentTransactions.Code, NoProducerID, NoProducerEpoch)
		return
	case t.producerID != pid && !retryOverflow:
		reply(out, kerr.InvalidProducerIDMapping.Code, NoProducerID, NoProducerEpoch)
		return
	case !validEpoch:
		reply(out, kerr.ProducerFenced.Code, NoProducerID, NoProducerEpoch)
		return
	}
	next := endState(commit)
	noPartitions := true
	switch t.state {
	case Ongoing:
		noPartitions = false
	case CompleteCommit:
		switch {
		case commit && retry:
			reply(out, 0, t.producerID, t.epoch)
			return
		case commit || retry:
			reply(out, kerr.InvalidTxnState.Code, NoProducerID, NoProducerEpoch)
			return
		}
	case CompleteAbort:
		switch {
		case !commit && retry:
			reply(out, 0, t.producerID, t.epoch)
			return
		case commit:
			reply(out, kerr.InvalidTxnState.Code, NoProducerID, NoProducerEpoch)
			return
		}
	case Empty:
		if commit {
			reply(out, kerr.InvalidTxnState.Code, NoProducerID, NoProducerEpoch)
			return
		}
	case PrepareCommit, PrepareAbort:
		reply(out, stateMismatch(t.state, commit), NoProducerID, NoProducerEpoch)
		return
	default:
		reply(out, kerr.UnknownServerError.Code, NoProducerID, NoProducerEpoch)
		return
	}
	nextID := NoProducerID
	if !fence && epochExhausted(t.epoch) {
		var code int16
		if nextID, code = p.nextID(); code != 0 {
			reply(out, code, NoProducerID, NoProducerEpoch)
			return
		}
	}
	if next == PrepareAbort && fence {
		t.takeFence(epoch)
	}
	tr, err := t.prepareEnd(next, v, nextID, now, noPartitions)
	if err != nil {
		reply(out, kerr.UnknownServerError.Code, NoProducerID, NoProducerEpoch)
		return
	}
	epochOK := func() bool { e := int32(t.epoch); return e == req || e == req+1 }
	p.writeEnd(out, t, tr, pid, fence, epochOK, true, reply)
}

// sendMarkers prepares the completion of a prepared transaction and asks
// for its markers (the completion is written at once when it has no
// partitions). It reports false if the completion cannot be prepared.
func (p *Partition) sendMarkers(out *Output, t *txn, now int64) bool {
	tr, err := t.prepareComplete(now)
	if err != nil {
		return false
	}
	t.markers = &markerState{commit: t.state == PrepareCommit, producerID: t.producerID, epoch: t.epoch, complete: tr}
	if len(t.parts) == 0 {
		p.writeComplete(out, t, false)
		return true
	}
	out.Markers = append(out.Markers, p.markersFor(t, t.parts.sorted(), false))
	return true
}

func (p *Partition) markersFor(t *txn, parts []TopicPartition, retry bool) Markers {
	return Markers{
		TransactionalID:  t.id,
		ProducerID:       t.markers.producerID,
		ProducerEpoch:    t.markers.epoch,
		Commit:           t.markers.commit,
		CoordinatorEpoch: p.epoch,
		Version:          t.version,
		Partitions:       parts,
		Retry:            retry,
	}
}

// MarkersWritten takes the outcome of markers asked for by a Markers
// output (matched by transactional id, producer id, epoch and result).
// Partitions with their marker leave the transaction; retriable failures
// are asked for again; once none is left the completion is written. A
// fenced marker (INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED)
// stops the sending: this coordinator is stale, and whoever loads the
// partition next completes the transaction.
func (p *Partition) MarkersWritten(id string, pid int64, epoch int16, commit bool, results []MarkerResult, now int64) Output {
	var out Output
	t := p.txns[id]
	if t == nil || t.markers == nil || t.markers.writing || t.markers.producerID != pid ||
		t.markers.epoch != epoch || t.markers.commit != commit {
		return out
	}
	var retry []TopicPartition
	for _, r := range results {
		if r.Deleted {
			delete(t.parts, r.Partition)
			continue
		}
		switch markerOutcome(r.Code) {
		case markerDone:
			delete(t.parts, r.Partition)
		case markerFenced:
			t.markers = nil
			return out
		default:
			if _, ok := t.parts[r.Partition]; ok {
				retry = append(retry, r.Partition)
			}
		}
	}
	if len(retry) > 0 {
		slices.SortFunc(retry, compareTP)
		out.Markers = append(out.Markers, p.markersFor(t, retry, true))
		return out
	}
	if len(t.parts) == 0 {
		p.writeComplete(&out, t, false)
	}
	return out
}

type markerAction int

const (
	markerRetry markerAction = iota
	markerDone
	markerFenced
)

// markerOutcome classifies a WriteTxnMarkers partition error as Kafka's
// coordinator does. Errors Kafka treats as fatal (CORRUPT_MESSAGE and the
// like) and unknown ones are retried here rather than stopping the
// coordinator.
func markerOutcome(code int16) markerAction {
	switch code {
	case 0, kerr.UnsupportedForMessageFormat.Code, kerr.UnsupportedVersion.Code:
		// The producer could not have written to a partition that
		// cannot take markers: nothing to wait for.
		return markerDone
	case kerr.InvalidProducerEpoch.Code, kerr.TransactionCoordinatorFenced.Code:
		return markerFenced
	}
	return markerRetry
}

// writeComplete writes a prepared transaction's completion. A write that
// fails for want of replicas is tried again; any other failure leaves the
// transaction prepared until the partition is loaded again.
func (p *Partition) writeComplete(out *Output, t *txn, retry bool) {
	ms := t.markers
	ms.writing = true
	p.issue(out, t, ms.complete, retry, func(out *Output, code int16, now int64) {
		switch {
		case code == 0:
			t.markers = nil
			if err := t.complete(ms.complete); err != nil {
				t.pending = noState
				return
			}
			if ms.commit {
				out.event(EventCommitted, t)
			} else {
				out.event(EventAborted, t)
			}
		case appendError(code) == kerr.CoordinatorNotAvailable.Code:
			p.writeComplete(out, t, true)
		default:
			t.markers = nil
			t.pending = noState
		}
	})
}

// appendError maps a failed append's error to the coordinator's answer,
// as Kafka does: retriable replication trouble is
// COORDINATOR_NOT_AVAILABLE, a lost leadership NOT_COORDINATOR.
func appendError(code int16) int16 {
	switch code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code,
		kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code:
		return kerr.UnknownServerError.Code
	}
	return code
}

// write asks for a transition's record. When it is written the transition
// is installed and then runs with code 0; when it fails, the pending
// transition is dropped and then runs with the mapped error.
func (p *Partition) write(out *Output, t *txn, tr transit, retry bool, then func(out *Output, code int16, now int64)) {
	p.issue(out, t, tr, retry, func(out *Output, code int16, now int64) {
		if code != 0 {
			t.pending = noState
			then(out, appendError(code), now)
			return
		}
		if err := t.complete(tr); err != nil {
			t.pending = noState
			then(out, kerr.UnknownServerError.Code, now)
			return
		}
		then(out, 0, now)
	})
}

// issue adds a Write of t's record tr; done runs with the raw append
// error code when Appended reports it.
func (p *Partition) issue(out *Output, t *txn, tr transit, retry bool, done func(out *Output, code int16, now int64)) {
	rec := Record{Key: EncodeKey(t.id), Value: EncodeValue(t.record(&tr, p.cfg.Version))}
	p.addWrite(out, []Record{rec}, retry, done)
}

func (p *Partition) addWrite(out *Output, recs []Record, retry bool, done func(out *Output, code int16, now int64)) {
	p.nextWrite++
	id := p.nextWrite
	p.writes[id] = pendingWrite{recs: recs, then: done}
	out.Writes = append(out.Writes, Write{ID: id, Records: recs, Retry: retry})
}

// Appended reports the outcome of a Write: code 0 when its records are
// committed, else the append's Kafka error code.
func (p *Partition) Appended(id uint64, code int16, now int64) Output {
	var out Output
	w, ok := p.writes[id]
	if !ok {
		return out
	}
	delete(p.writes, id)
	w.then(&out, code, now)
	return out
}

// PendingWrites returns the number of writes not yet reported.
func (p *Partition) PendingWrites() int { return len(p.writes) }

// Abandon answers every request waiting on a write with NOT_COORDINATOR
// and forgets the writes: the partition is being unloaded.
func (p *Partition) Abandon() Output {
	var out Output
	ids := make([]uint64, 0, len(p.writes))
	for id := range p.writes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		w := p.writes[id]
		delete(p.writes, id)
		w.then(&out, kerr.NotCoordinator.Code, 0)
	}
	// The writes' callbacks may have asked for retries; nobody will
	// append them.
	out.Writes, out.Markers = nil, nil
	clear(p.writes)
	return out
}

// AbortTimedOut aborts every Ongoing transaction older than its
// transaction.timeout.ms, bumping the epoch to fence its producer, as
// Kafka's periodic check (transaction.abort.timed.out.transaction.cleanup.interval.ms)
// does.
func (p *Partition) AbortTimedOut(now int64) Output {
	var out Output
	for _, id := range p.sortedIDs() {
		t := p.txns[id]
		if t.state != Ongoing || t.pending != noState || t.startMs+int64(t.timeoutMs) >= now {
			continue
		}
		tr, err := t.prepareFence()
		if err != nil {
			continue
		}
		out.event(EventTimedOut, t)
		p.end(&out, t.id, tr.producerID, tr.epoch, false, false, p.cfg.Version, now,
			func(*Output, int16, int64, int16) {})
	}
	return out
}

// Expire removes the transactional ids with no transaction open and no
// request for transactional.id.expiration.ms: one write of tombstones; an
// id is forgotten once it is written (unless it was used meanwhile).
func (p *Partition) Expire(now int64) Output {
	var out Output
	type dead struct {
		t     *txn
		epoch int16
	}
	var expired []dead
	var recs []Record
	for _, id := range p.sortedIDs() {
		t := p.txns[id]
		if t.pending != noState || !t.state.expirable() || t.updateMs > now-p.cfg.ExpirationMs {
			continue
		}
		tr, err := t.prepareDead()
		if err != nil {
			continue
		}
		expired = append(expired, dead{t, tr.epoch})
		recs = append(recs, Record{Key: EncodeKey(id)})
	}
	if len(recs) == 0 {
		return out
	}
	p.addWrite(&out, recs, false, func(out *Output, code int16, _ int64) {
		for _, d := range expired {
			if code == 0 && d.t.pending == Dead && d.t.epoch == d.epoch && p.txns[d.t.id] == d.t {
				delete(p.txns, d.t.id)
				out.event(EventExpired, d.t)
				continue
			}
			d.t.pending = noState
		}
	})
	return out
}

// Description is DescribeTransactions' view of one transactional id.
type Description struct {
	Code          int16
	ProducerID    int64
	ProducerEpoch int16
	State         State
	TimeoutMs     int32
	StartMs       int64
	Partitions    []TopicPartition
}

// Describe answers DescribeTransactions for one transactional id.
func (p *Partition) Describe(id string) Description {
	if id == "" {
		return Description{Code: kerr.InvalidRequest.Code}
	}
	t := p.txns[id]
	if t == nil || t.state == Dead {
		return Description{Code: kerr.TransactionalIDNotFound.Code}
	}
	return Description{
		ProducerID:    t.producerID,
		ProducerEpoch: t.epoch,
		State:         t.state,
		TimeoutMs:     t.timeoutMs,
		StartMs:       t.startMs,
		Partitions:    t.parts.sorted(),
	}
}

// ListFilter selects ListTransactions' answers; zero values select all.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs (v1+) keeps transactions running longer than this;
	// negative: all.
	MinDurationMs int64
	// Pattern (v2+) keeps transactional ids it matches whole.
	Pattern *regexp.Regexp
}

// Listing is one ListTransactions entry.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// List answers ListTransactions for this partition's ids, sorted by id.
// The transient Dead state is never listed.
func (p *Partition) List(f ListFilter, now int64) []Listing {
	var out []Listing
	for _, id := range p.sortedIDs() {
		t := p.txns[id]
		switch {
		case t.state == Dead:
		case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, t.producerID):
		case len(f.States) > 0 && !slices.Contains(f.States, t.state):
		case f.MinDurationMs >= 0 && now-t.startMs <= f.MinDurationMs:
		case f.Pattern != nil && !f.Pattern.MatchString(id):
		default:
			out = append(out, Listing{TransactionalID: id, ProducerID: t.producerID, State: t.state})
		}
	}
	return out
}
