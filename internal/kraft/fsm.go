package kraft

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"weir/internal/metadata"
)

// MetadataFSM is the replicated state machine of the metadata log: every
// committed entry is a batch of metadata records (metadata.EncodeBatch)
// that it applies to the image, at the entry's raft index as the image's
// offset. It implements quorum.FSM.
//
// Readers call Image and keep the result as long as they like: images
// are immutable and the pointer is swapped atomically, so a reader never
// sees half a batch. Owners of local state that must react to every
// change (a broker's replicas, caches) Subscribe instead.
type MetadataFSM struct {
	log *slog.Logger

	img     atomic.Pointer[metadata.Image]
	changed atomic.Pointer[chan struct{}] // closed and replaced after each apply or restore

	applyErrors    atomic.Int64
	restores       atomic.Int64
	restoredOffset atomic.Int64

	// mu orders publication (img.Store) with subscription, so that a new
	// subscriber's first image and the deltas that follow it leave no gap
	// and no overlap. It is a leaf lock: nothing else is taken under it
	// except a Subscription's own mu.
	mu   sync.Mutex
	subs map[*Subscription]struct{}
}

// NewMetadataFSM returns a state machine holding the empty image
// (offset -1).
func NewMetadataFSM(logger *slog.Logger) *MetadataFSM {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &MetadataFSM{log: logger, subs: map[*Subscription]struct{}{}}
	f.img.Store(metadata.Empty())
	ch := make(chan struct{})
	f.changed.Store(&ch)
	f.restoredOffset.Store(-1)
	return f
}

// Applied is what Apply returns for an entry (the Propose result on the
// leader): the image before and after it and what changed. Err is set
// when the entry was not a valid batch for the image; the entry then
// applied as an empty batch, so Delta is empty and only the offset moved.
type Applied struct {
	Prev  *metadata.Image
	Image *metadata.Image
	Delta *metadata.Delta
	Err   error
}

// Image is the image as of the last applied entry.
func (f *MetadataFSM) Image() *metadata.Image { return f.img.Load() }

// Offset is the offset of the last applied entry (-1 before any).
func (f *MetadataFSM) Offset() int64 { return f.img.Load().Offset() }

// Changed returns a channel closed at the next apply or restore. Load it
// before checking the image, then wait on it, and no change is missed.
func (f *MetadataFSM) Changed() <-chan struct{} { return *f.changed.Load() }

// ApplyErrors counts entries refused as batches (decode or apply errors).
func (f *MetadataFSM) ApplyErrors() int64 { return f.applyErrors.Load() }

// Restores counts snapshot restores; RestoredOffset is the image offset
// of the last one (-1 if none).
func (f *MetadataFSM) Restores() int64       { return f.restores.Load() }
func (f *MetadataFSM) RestoredOffset() int64 { return f.restoredOffset.Load() }

// WaitForOffset waits until the image's offset is at least off.
func (f *MetadataFSM) WaitForOffset(ctx context.Context, off int64) (*metadata.Image, error) {
	for {
		ch := f.Changed()
		if img := f.Image(); img.Offset() >= off {
			return img, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Apply applies one committed entry. A batch that does not decode or does
// not apply is deterministic (every node refuses it the same way), so it
// is logged and applied as an empty batch: offsets keep matching the log
// on every node.
func (f *MetadataFSM) Apply(index uint64, data []byte) any {
	prev := f.img.Load()
	off := int64(index)
	res := &Applied{Prev: prev}
	recs, err := metadata.DecodeBatch(data)
	if err == nil {
		res.Image, res.Delta, err = prev.Apply(off, recs)
	}
	if err != nil {
		f.applyErrors.Add(1)
		f.log.Error("metadata: entry refused, applied as an empty batch", "offset", off, "err", err)
		res.Err = err
		res.Image, res.Delta, err = prev.Apply(off, nil)
		if err != nil {
			// Raft indexes grow and the image's offset is always one of
			// them, so an empty batch cannot be refused.
			panic(fmt.Sprintf("kraft: empty batch refused at offset %d over %d: %v", off, prev.Offset(), err))
		}
	}
	f.publish(Update{Image: res.Image, Delta: res.Delta})
	return res
}

// Snapshot captures the current image; the returned function writes it
// later, while further entries are applied to newer images.
func (f *MetadataFSM) Snapshot() (func(io.Writer) error, error) {
	img := f.img.Load()
	return func(w io.Writer) error { return metadata.WriteSnapshot(w, img) }, nil
}

// Restore replaces the image with a snapshot's. Subscribers get a Resync
// update: the change cannot be expressed as a delta.
func (f *MetadataFSM) Restore(r io.Reader) error {
	img, err := metadata.ReadSnapshot(r)
	if err != nil {
		return fmt.Errorf("kraft: restore metadata snapshot: %w", err)
	}
	f.restores.Add(1)
	f.restoredOffset.Store(img.Offset())
	f.log.Info("metadata snapshot restored", "offset", img.Offset(), "brokers", img.NumBrokers(), "topics", img.NumTopics(), "partitions", img.NumPartitions())
	f.publish(Update{Image: img, Resync: true})
	return nil
}

func (f *MetadataFSM) publish(u Update) {
	f.mu.Lock()
	f.img.Store(u.Image)
	for s := range f.subs {
		s.push(u)
	}
	f.mu.Unlock()
	ch := make(chan struct{})
	close(*f.changed.Swap(&ch))
}

// Update is one change of the applied metadata, delivered to subscribers
// in log order.
type Update struct {
	// Image is the image after the change.
	Image *metadata.Image
	// Delta is what one entry changed; nil when Resync.
	Delta *metadata.Delta
	// Resync says that the updates before this one cannot be followed by
	// deltas: it is the first update of a subscription, the subscriber
	// fell behind its limit, or a snapshot replaced the state. The
	// subscriber reconciles its local state with Image as a whole.
	Resync bool
}

// DefaultSubscriptionLimit is the number of undelivered updates after
// which a subscription collapses to a resync.
const DefaultSubscriptionLimit = 1024

// Subscription delivers every applied change to one consumer.
//
// Backpressure: Apply never waits for a subscriber. Each subscription
// queues at most its limit of undelivered updates; when one more arrives,
// the queue is replaced by a single Resync update carrying the newest
// image. A slow consumer therefore costs bounded memory and loses deltas,
// never correctness: it learns that it must reconcile with a whole image.
// Apply holds the subscription's lock only to append or collapse.
type Subscription struct {
	f     *MetadataFSM
	limit int
	ready chan struct{} // one token while the queue is not empty

	mu        sync.Mutex // leaf
	queue     []Update
	closed    bool
	collapsed int64
}

// Subscribe starts a subscription. Its first update is a Resync with the
// current image; then every later change follows in log order. limit <= 0
// means DefaultSubscriptionLimit. Close it when done.
func (f *MetadataFSM) Subscribe(limit int) *Subscription {
	if limit <= 0 {
		limit = DefaultSubscriptionLimit
	}
	s := &Subscription{f: f, limit: limit, ready: make(chan struct{}, 1)}
	f.mu.Lock()
	s.push(Update{Image: f.img.Load(), Resync: true})
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	return s
}

func (s *Subscription) push(u Update) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if len(s.queue) >= s.limit {
		s.queue = append(s.queue[:0], Update{Image: u.Image, Resync: true})
		s.collapsed++
	} else {
		s.queue = append(s.queue, u)
	}
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// Ready has a value when updates may be waiting: receive from it, then
// Drain.
func (s *Subscription) Ready() <-chan struct{} { return s.ready }

// Drain takes every queued update, oldest first.
func (s *Subscription) Drain() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}

// Next waits for the next update.
func (s *Subscription) Next(ctx context.Context) (Update, error) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			u := s.queue[0]
			s.queue[0] = Update{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			return u, nil
		}
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return Update{}, errSubscriptionClosed
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return Update{}, ctx.Err()
		}
	}
}

// Collapsed counts the times the queue overflowed into a resync.
func (s *Subscription) Collapsed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.collapsed
}

// Close ends the subscription; queued updates are dropped.
func (s *Subscription) Close() {
	s.f.mu.Lock()
	delete(s.f.subs, s)
	s.f.mu.Unlock()
	s.mu.Lock()
	s.closed, s.queue = true, nil
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}
