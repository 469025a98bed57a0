package txn

import "fmt"

// State is a transaction's state as the coordinator keeps it and as
// __transaction_state stores it (TransactionStatus, the same ids as
// Kafka's).
type State int8

const (
	// Empty: no transaction open; the producer id and epoch are set.
	Empty State = 0
	// Ongoing: partitions (or a group's offsets) were added.
	Ongoing State = 1
	// PrepareCommit: EndTxn(commit) was written; markers are on their way.
	PrepareCommit State = 2
	// PrepareAbort: EndTxn(abort), a timeout or a fencing InitProducerId
	// was written; markers are on their way.
	PrepareAbort State = 3
	// CompleteCommit: every partition has its COMMIT marker.
	CompleteCommit State = 4
	// CompleteAbort: every partition has its ABORT marker.
	CompleteAbort State = 5
	// Dead: the transactional id is being expired. Never written to
	// the log (a tombstone is), only held while the tombstone is in
	// flight.
	Dead State = 6
	// PrepareEpochFence: an older producer is being fenced while its
	// transaction is open. Never written, only pending.
	PrepareEpochFence State = 7
)

// noState marks the absence of a pending transition.
const noState State = -1

var stateNames = [...]string{
	Empty:             "Empty",
	Ongoing:           "Ongoing",
	PrepareCommit:     "PrepareCommit",
	PrepareAbort:      "PrepareAbort",
	CompleteCommit:    "CompleteCommit",
	CompleteAbort:     "CompleteAbort",
	Dead:              "Dead",
	PrepareEpochFence: "PrepareEpochFence",
}

// String returns the name DescribeTransactions and ListTransactions use.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// Valid reports whether s is one of the eight states.
func (s State) Valid() bool { return s >= 0 && int(s) < len(stateNames) }

// StateByName returns the state ListTransactions' StateFilters name.
func StateByName(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return noState, false
}

// expirable reports whether a transactional id in this state may expire
// after transactional.id.expiration.ms without activity.
func (s State) expirable() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// completed reports whether no transaction is open: the states a new
// transaction starts from.
func (s State) completed() bool {
	return s == Empty || s == CompleteCommit || s == CompleteAbort
}

// preparing reports whether markers are being written.
func (s State) preparing() bool { return s == PrepareCommit || s == PrepareAbort }

// mayFollow reports whether a transaction may move from prev to s, the
// one table every transition is checked against.
func (s State) mayFollow(prev State) bool {
	switch s {
	case Empty:
		return prev.completed()
	case Ongoing:
		return prev == Ongoing || prev.completed()
	case PrepareCommit:
		return prev == Ongoing
	case PrepareAbort:
		// From a completed state only under transaction version 2,
		// whose producers abort when unsure of the coordinator's state.
		return prev == Ongoing || prev == PrepareEpochFence || prev.completed()
	case CompleteCommit:
		return prev == PrepareCommit
	case CompleteAbort:
		return prev == PrepareAbort
	case Dead:
		return prev.completed()
	case PrepareEpochFence:
		return prev == Ongoing
	}
	return false
}

// Version is a transaction protocol version, the transaction.version
// feature level: 0 and 1 the classic protocol (1 writes flexible state
// records), 2 KIP-890's (the epoch bumped at every EndTxn, partitions
// added by their leaders).
type Version int16

const (
	// V0 is the original protocol.
	V0 Version = 0
	// V1 writes flexible __transaction_state values.
	V1 Version = 1
	// V2 bumps the epoch at every EndTxn (KIP-890 part 2).
	V2 Version = 2
)

// bumpsEpoch reports whether EndTxn bumps the producer epoch.
func (v Version) bumpsEpoch() bool { return v >= V2 }

// valueVersion is the TransactionLogValue version written at this
// feature level.
func (v Version) valueVersion() int16 {
	if v >= V1 {
		return 1
	}
	return 0
}
