package sharestate

import (
	"context"
	"errors"
	"fmt"

	"weir/internal/share"
)

// Topic holds the share coordinators' durable records, as in Kafka: a
// replicated internal topic whose partition leaders coordinate the keys
// that hash to them.
const Topic = "__share_group_state"

// Record keys of __share_group_state start with a kind byte.
const (
	// KeyState: a share partition's delivery state; the rest of the key
	// is a share.StateKey, the value a share.StateRecord, a null value
	// deletes the partition's state.
	KeyState byte = 1
	// KeyGroup and KeyConfig are records of share groups and their
	// configs that a single node kept here before share groups moved to
	// __consumer_offsets and configs to the metadata log; a replay keeps
	// them as whole records and uses neither.
	KeyGroup  byte = 2
	KeyConfig byte = 3
)

var errKey = errors.New("sharestate: bad __share_group_state key")

// RecordKey is the __share_group_state key of a share partition's state.
func RecordKey(k share.StateKey) ([]byte, error) {
	return k.AppendTo([]byte{KeyState})
}

// RecordIsFull checks a record's key and reports whether the record
// replaces the key's earlier records (a snapshot, a deletion, a group or
// config record) rather than adding to them (a delta).
func RecordIsFull(key, value []byte) (bool, error) {
	if len(key) == 0 {
		return false, errKey
	}
	switch key[0] {
	case KeyState:
		if _, err := share.DecodeStateKey(key[1:]); err != nil {
			return false, err
		}
		if value == nil {
			return true, nil
		}
		r, err := share.DecodeStateRecord(value)
		if err != nil {
			return false, err
		}
		return r.Kind == share.Snapshot, nil
	case KeyGroup, KeyConfig:
		return true, nil
	}
	return false, fmt.Errorf("%w: kind %d", errKey, key[0])
}

// Fence is what a write or read tells the coordinator to fence it with:
// the share partition's state epoch and the data partition's leader
// epoch. Reinit marks an administrative reset, which starts a new state
// epoch above the coordinator's whatever the writer's.
type Fence struct {
	StateEpoch, LeaderEpoch int32
	Reinit                  bool
}

// Ticket completes when a write is committed in __share_group_state
// (held by every in-sync replica, and fsynced where the topic syncs
// before acknowledging), or when a read has its answer.
type Ticket struct {
	done chan struct{}
	err  error
	// recs is a local read's answer: the key's values from its latest
	// full record on, none when the key has no state.
	recs [][]byte
	// folded is a remote read's answer, the state folded into one
	// snapshot; nil when the key has no state.
	folded *share.StateRecord
}

// Wait returns the write's error, or ctx's. A nil ticket is a write that
// was not needed.
func (t *Ticket) Wait(ctx context.Context) error {
	if t == nil {
		return nil
	}
	select {
	case <-t.done:
		return t.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Settled reports, without waiting, whether the write is over and its
// error. A nil ticket is over.
func (t *Ticket) Settled() (done bool, err error) {
	if t == nil {
		return true, nil
	}
	select {
	case <-t.done:
		return true, t.err
	default:
		return false, nil
	}
}

func newTicket() *Ticket { return &Ticket{done: make(chan struct{})} }

// PendingTicket is a ticket for a write done elsewhere than by this
// package (another StateStore, such as a test's), and the function that
// completes it with the write's outcome; call it once.
func PendingTicket() (*Ticket, func(error)) {
	t := newTicket()
	return t, func(err error) {
		t.err = err
		close(t.done)
	}
}

// failedTicket is a ticket already completed with err.
func failedTicket(err error) *Ticket {
	t := newTicket()
	t.err = err
	close(t.done)
	return t
}

// Later is the later of two tickets of one share partition (they
// complete in order); either may be nil.
func Later(a, b *Ticket) *Ticket {
	if b != nil {
		return b
	}
	return a
}

// WaitAll waits for every ticket; the first error wins.
func WaitAll(ctx context.Context, ts ...*Ticket) error {
	for _, t := range ts {
		if err := t.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}
