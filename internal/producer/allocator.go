package producer

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// DefaultBlockSize is how many producer ids are reserved at a time, as
// Kafka's controller hands them to brokers in blocks of 1000.
const DefaultBlockSize = 1000

// ErrTransactionsUnsupported is what InitProducerID answers a producer
// that names a transactional id. It wraps TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (53), the error a Kafka broker gives a principal that may not use
// transactional ids: clients treat it as fatal, so a transactional
// producer fails at once with a clear error instead of retrying. For the
// same reason FindCoordinator with key type TRANSACTION should answer it
// too, as Kafka does when DESCRIBE on the transactional id is denied. The
// alternatives behave worse: COORDINATOR_NOT_AVAILABLE is retriable and
// leaves the client retrying until its timeout, and UNSUPPORTED_VERSION
// would claim a version problem that does not exist.
var ErrTransactionsUnsupported = fmt.Errorf("%w: transactions are not supported", kerr.TransactionalIDAuthorizationFailed)

// Reserver hands out disjoint blocks of producer ids. A block it returned
// is never returned again, by this process or by any later one.
type Reserver interface {
	// Reserve reserves the n ids starting at the returned one.
	Reserve(n int64) (first int64, err error)
}

// Allocator hands out producer ids for InitProducerId. It is safe for
// concurrent use. Ids increase monotonically within a process; after a
// restart they continue above every block reserved before it, so the
// unused rest of the last block is skipped, never reused.
type Allocator struct {
	src       Reserver
	blockSize int64

	mu   sync.Mutex
	next int64 // next id to hand out
	end  int64 // end of the current block (exclusive)
}

// NewAllocator returns an allocator reserving blockSize ids at a time from
// src; blockSize <= 0 means DefaultBlockSize.
func NewAllocator(src Reserver, blockSize int64) *Allocator {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	return &Allocator{src: src, blockSize: blockSize}
}

// NextID returns a producer id never handed out before. Once per block it
// reserves the next block from the Reserver with the lock held: for the
// file reserver that is one fsync'd write per blockSize ids.
func (a *Allocator) NextID() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next >= a.end {
		first, err := a.src.Reserve(a.blockSize)
		if err != nil {
			return NoProducerID, fmt.Errorf("producer: reserve ids: %w", err)
		}
		a.next, a.end = first, first+a.blockSize
	}
	id := a.next
	a.next++
	return id, nil
}

// InitProducerID answers InitProducerId (API 22) for a producer with the
// given transactional id (nil when it has none) and returns the producer
// id and epoch to send back.
//
// A non-transactional producer always gets a new producer id with epoch 0.
// The ProducerId and ProducerEpoch fields that requests carry since v3
// (KIP-360) are ignored for it, as Kafka ignores them: a Kafka broker hands
// an idempotent producer a fresh id on every InitProducerId and never bumps
// its epoch. Clients bump the epoch of an idempotent producer themselves,
// which Check allows (a newer epoch starting at sequence 0), and ask for a
// new id when the epoch would overflow.
//
// Any transactional id, the empty one included, gets
// ErrTransactionsUnsupported: Kafka checks a transactional id's
// authorization before anything else, so a broker denying them all never
// reaches its INVALID_REQUEST check for an empty id. Id exhaustion and
// Reserver failures wrap UNKNOWN_SERVER_ERROR.
func (a *Allocator) InitProducerID(transactionalID *string) (int64, int16, error) {
	if transactionalID != nil {
		return NoProducerID, NoProducerEpoch, ErrTransactionsUnsupported
	}
	id, err := a.NextID()
	if err != nil {
		return NoProducerID, NoProducerEpoch, fmt.Errorf("%w: %v", kerr.UnknownServerError, err)
	}
	return id, 0, nil
}

// ErrExhausted is returned once every int64 producer id has been handed out.
var ErrExhausted = errors.New("producer: producer ids exhausted")

// checkBlock reports whether n ids starting at first fit below MaxInt64.
func checkBlock(first, n int64) error {
	if n <= 0 {
		return fmt.Errorf("producer: block of %d ids", n)
	}
	if first > math.MaxInt64-n {
		return ErrExhausted
	}
	return nil
}
