package txn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// NoProducerID and NoProducerEpoch are the "none" values of the protocol.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
)

// epochExhausted reports whether a producer epoch leaves no room to fence
// its producer: the coordinator never hands out math.MaxInt16 itself, so
// that it can always bump once more to fence.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

type partSet map[TopicPartition]struct{}

func (s partSet) clone() partSet {
	c := make(partSet, len(s))
	for tp := range s {
		c[tp] = struct{}{}
	}
	return c
}

func (s partSet) sorted() []TopicPartition {
	out := make([]TopicPartition, 0, len(s))
	for tp := range s {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTP)
	return out
}

func (s partSet) containsAll(o partSet) bool {
	for tp := range o {
		if _, ok := s[tp]; !ok {
			return false
		}
	}
	return true
}

func (s partSet) equal(o partSet) bool { return len(s) == len(o) && s.containsAll(o) }

// errIllegal is a transition the coordinator must never attempt: a bug or
// a state no Kafka coordinator writes. Callers answer
// UNKNOWN_SERVER_ERROR and leave the state as it was.
var errIllegal = errors.New("txn: illegal transition")

// fields is a transactional id's durable state: what a record holds
// (plus the last epoch, which only lives in memory).
type fields struct {
	producerID     int64
	prevProducerID int64
	nextProducerID int64
	epoch          int16
	// lastEpoch is the epoch before the latest bump, so that a producer
	// retrying an InitProducerId whose answer it lost gets the same
	// epoch (KIP-360). Not persisted: -1 after a load.
	lastEpoch int16
	timeoutMs int32
	state     State
	parts     partSet
	startMs   int64
	updateMs  int64
	version   Version
}

// txn is one transactional id's coordinator state.
type txn struct {
	id string
	fields
	// pending is the state a transition in flight (its record being
	// written) moves to, or noState. While one is in flight no other
	// transition may start: requests get CONCURRENT_TRANSACTIONS.
	pending State
	// failedFence notes that a fencing epoch bump was not written: the
	// next fence reuses the bumped epoch instead of bumping again.
	failedFence bool
	// markers is the completion being sent while PrepareCommit or
	// PrepareAbort (nil otherwise, or once sending was given up).
	markers *markerState
}

// markerState tracks a prepared transaction's markers. The partitions
// still waiting for their marker are the transaction's parts (removed one
// by one as markers land, as Kafka does); complete is the CompleteCommit or
// CompleteAbort transition written once none is left.
type markerState struct {
	commit     bool
	producerID int64
	epoch      int16
	complete   fields
	writing    bool // the complete record is being written
}

// transit is a prepared transition: the fields to write and, once the
// write succeeded, to install.
type transit = fields

func (t *txn) record(f *fields, v Version) *Value {
	val := &Value{
		Version:           v.valueVersion(),
		ProducerID:        f.producerID,
		PrevProducerID:    f.prevProducerID,
		NextProducerID:    f.nextProducerID,
		ProducerEpoch:     f.epoch,
		NextProducerEpoch: -1,
		TimeoutMs:         f.timeoutMs,
		Status:            f.state,
		LastUpdateMs:      f.updateMs,
		StartMs:           f.startMs,
		ClientVersion:     int16(f.version),
	}
	if val.Version == 0 {
		// Version 0 has no tagged fields: these read back as defaults.
		val.PrevProducerID, val.NextProducerID, val.ClientVersion = -1, -1, 0
	}
	if f.state != Empty {
		val.Partitions = groupPartitions(f.parts)
	}
	return val
}

// groupPartitions lists a partition set by topic, both sorted.
func groupPartitions(s partSet) []TopicPartitions {
	out := []TopicPartitions{}
	for _, tp := range s.sorted() {
		if n := len(out); n > 0 && out[n-1].Topic == tp.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, tp.Partition)
			continue
		}
		out = append(out, TopicPartitions{Topic: tp.Topic, Partitions: []int32{tp.Partition}})
	}
	return out
}

// fromValue is the state a replayed record holds.
func fromValue(v *Value) fields {
	f := fields{
		producerID:     v.ProducerID,
		prevProducerID: v.PrevProducerID,
		nextProducerID: v.NextProducerID,
		epoch:          v.ProducerEpoch,
		lastEpoch:      NoProducerEpoch,
		timeoutMs:      v.TimeoutMs,
		state:          v.Status,
		parts:          partSet{},
		startMs:        v.StartMs,
		updateMs:       v.LastUpdateMs,
		version:        Version(v.ClientVersion),
	}
	if v.Status != Empty {
		for _, tp := range v.Partitions {
			for _, p := range tp.Partitions {
				f.parts[TopicPartition{tp.Topic, p}] = struct{}{}
			}
		}
	}
	return f
}

// prepare checks a transition to next.state and marks it pending. The
// producer id always moves to prevProducerID, as in Kafka's records.
func (t *txn) prepare(next fields) (transit, error) {
	if t.pending != noState {
		return transit{}, fmt.Errorf("%w: %s to %s while %s is pending", errIllegal, t.state, next.state, t.pending)
	}
	if next.producerID < 0 {
		return transit{}, fmt.Errorf("%w: producer id %d", errIllegal, next.producerID)
	}
	if next.state != Dead && next.epoch < 0 {
		return transit{}, fmt.Errorf("%w: producer epoch %d", errIllegal, next.epoch)
	}
	if !next.state.mayFollow(t.state) {
		return transit{}, fmt.Errorf("%w: %s to %s", errIllegal, t.state, next.state)
	}
	next.prevProducerID = t.producerID
	t.pending = next.state
	return next, nil
}

// next returns a copy of t's fields to change into a transition.
func (t *txn) next(s State) fields {
	f := t.fields
	f.state = s
	return f
}

// prepareFence bumps the epoch to fence the producer of an open
// transaction; an abort follows at once. A fence whose write failed
// before is not bumped again: that epoch never reached a client.
func (t *txn) prepareFence() (transit, error) {
	f := t.next(PrepareEpochFence)
	if !t.failedFence && t.epoch != math.MaxInt16 {
		f.epoch = t.epoch + 1
	}
	return t.prepare(f)
}

// prepareBump is InitProducerId's epoch bump. expected is the request's
// epoch (KIP-360) or nil: a new producer fences every older one and
// forgets the last epoch; a producer recovering with its current epoch
// bumps again; one retrying with the epoch before the last bump gets the
// current epoch back; any other epoch is fenced.
func (t *txn) prepareBump(timeoutMs int32, expected *int16, now int64) (transit, int16, error) {
	if epochExhausted(t.epoch) {
		return transit{}, 0, fmt.Errorf("%w: epochs of producer %d exhausted", errIllegal, t.producerID)
	}
	f := t.next(Empty)
	switch {
	case expected == nil:
		f.epoch, f.lastEpoch = t.epoch+1, NoProducerEpoch
	case t.epoch == NoProducerEpoch || *expected == t.epoch:
		f.epoch, f.lastEpoch = t.epoch+1, t.epoch
	case *expected == t.lastEpoch:
		// A retry: no new epoch.
	default:
		return transit{}, kerr.ProducerFenced.Code, nil
	}
	f.timeoutMs = timeoutMs
	f.parts = partSet{}
	f.startMs = -1
	f.updateMs = now
	tr, err := t.prepare(f)
	return tr, 0, err
}

// prepareRotate gives the transactional id a new producer id at epoch 0
// once its epochs are exhausted. withLast keeps the exhausted epoch as the
// last epoch (the producer named it, KIP-360).
func (t *txn) prepareRotate(newID int64, timeoutMs int32, now int64, withLast bool) (transit, error) {
	if t.state == Ongoing || t.state.preparing() {
		return transit{}, fmt.Errorf("%w: rotating producer ids with a transaction open", errIllegal)
	}
	f := t.next(Empty)
	f.producerID = newID
	f.epoch = 0
	f.lastEpoch = NoProducerEpoch
	if withLast {
		f.lastEpoch = t.epoch
	}
	f.timeoutMs = timeoutMs
	f.parts = partSet{}
	f.startMs = -1
	f.updateMs = now
	return t.prepare(f)
}

// prepareAdd adds partitions, starting a transaction when none is open.
func (t *txn) prepareAdd(add []TopicPartition, now int64, v Version) (transit, error) {
	f := t.next(Ongoing)
	if t.state.completed() {
		f.startMs = now
	}
	f.parts = t.parts.clone()
	for _, tp := range add {
		f.parts[tp] = struct{}{}
	}
	f.updateMs = now
	f.version = v
	return t.prepare(f)
}

// prepareEnd moves to PrepareCommit or PrepareAbort. Under transaction
// version 2 the epoch is bumped (except, to let a broken producer recover,
// an abort already at math.MaxInt16); nextID is the producer id to move
// to when that bump exhausts the epochs. An abort with no partitions
// (version 2 only) starts its transaction now.
func (t *txn) prepareEnd(s State, v Version, nextID int64, now int64, noPartitions bool) (transit, error) {
	f := t.next(s)
	if v.bumpsEpoch() {
		if !(t.epoch == math.MaxInt16 && s == PrepareAbort) {
			f.epoch = t.epoch + 1
		}
		f.lastEpoch = t.epoch
	}
	if noPartitions {
		f.startMs = now
	}
	f.nextProducerID = nextID
	f.updateMs = now
	f.version = v
	return t.prepare(f)
}

// prepareComplete is the CompleteCommit or CompleteAbort written once
// every marker is in. A version 2 transaction whose epochs ran out moves
// to its next producer id at epoch 0 here; the last epoch stays the one
// the client saw last.
func (t *txn) prepareComplete(now int64) (transit, error) {
	s := CompleteAbort
	if t.state == PrepareCommit {
		s = CompleteCommit
	}
	// The prepare record is written: a fence it carried is durable.
	t.failedFence = false
	f := t.next(s)
	if t.version.bumpsEpoch() && t.nextProducerID != NoProducerID {
		f.producerID = t.nextProducerID
		f.epoch = 0
	}
	f.nextProducerID = NoProducerID
	f.parts = partSet{}
	f.updateMs = now
	return t.prepare(f)
}

// prepareDead expires the transactional id.
func (t *txn) prepareDead() (transit, error) {
	f := t.next(Dead)
	f.parts = partSet{}
	return t.prepare(f)
}

// complete installs a transition whose record was written, after checking
// that it is the one pending and keeps the invariants: the epoch stays,
// grows by one or restarts at 0 with a new producer id; partitions are
// only added while Ongoing; timestamps and the timeout hold.
func (t *txn) complete(tr transit) error {
	if t.pending == noState || t.pending != tr.state {
		return fmt.Errorf("%w: completing %s while %s is pending", errIllegal, tr.state, t.pending)
	}
	ok := true
	switch tr.state {
	case Empty:
		bump := tr.epoch == t.epoch+1 || (tr.epoch == 0 && tr.producerID != t.producerID)
		ok = (t.epoch == tr.epoch || bump) && len(tr.parts) == 0 && tr.startMs == -1
	case Ongoing:
		ok = t.sameProducer(tr) && tr.parts.containsAll(t.parts) && t.timeoutMs == tr.timeoutMs
	case PrepareCommit, PrepareAbort:
		emptyAbort := tr.state == PrepareAbort && tr.version.bumpsEpoch() && t.state.completed()
		ok = t.sameProducer(tr) && t.parts.equal(tr.parts) && t.timeoutMs == tr.timeoutMs &&
			(t.startMs == tr.startMs || emptyAbort)
	case CompleteCommit, CompleteAbort:
		ok = t.sameProducer(tr) && t.timeoutMs == tr.timeoutMs && tr.startMs != -1
	default:
		// PrepareEpochFence is never written; Dead ends in removal.
		ok = false
	}
	if !ok {
		return fmt.Errorf("%w: %s to %s with unexpected fields", errIllegal, t.state, tr.state)
	}
	t.fields = tr
	t.pending = noState
	return nil
}

// sameProducer checks the producer id and epoch a transition keeps: under
// transaction version 2 a prepare bumps the epoch by one and a complete may
// move to the next producer id at epoch 0.
func (t *txn) sameProducer(tr transit) bool {
	if tr.version.bumpsEpoch() {
		switch {
		case (tr.state == CompleteCommit || tr.state == CompleteAbort) && tr.epoch == 0:
			return tr.lastEpoch == t.lastEpoch && tr.prevProducerID == t.producerID
		case tr.state == PrepareCommit || tr.state == PrepareAbort:
			return tr.lastEpoch == t.epoch && tr.producerID == t.producerID
		}
	}
	return tr.epoch == t.epoch && tr.producerID == t.producerID
}
