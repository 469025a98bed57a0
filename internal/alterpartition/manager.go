package alterpartition

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/clock"
	"weir/internal/replica"
)

// Host is what the Manager needs of its broker.
type Host interface {
	// AlterPartition sends req to the active controller and returns its
	// answer; ctx bounds it.
	AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error)
	// BrokerEpoch is this broker's epoch from its registration, -1
	// before it registered.
	BrokerEpoch() int64
	// RegisteredEpoch is broker id's epoch in the metadata image.
	RegisteredEpoch(id int32) (epoch int64, ok bool)
}

// Partition is a leader replica whose proposals the Manager sends:
// *replica.Replica.
type Partition interface {
	Topic() string
	TopicID() [16]byte
	Partition() int32
	// CompleteISRChange takes the controller's answer to change and says
	// whether the outcome is unknown, so the change must be sent again.
	CompleteISRChange(change replica.ISRChange, res replica.ISRChangeResult) (retry bool)
}

// Config configures a Manager. Zero values take the defaults named.
type Config struct {
	// BrokerID is this broker's node id.
	BrokerID int32
	Host     Host
	// Clock paces the back-off; clock.System() by default.
	Clock  clock.Clock
	Logger *slog.Logger
	// MaxBatch bounds the partitions of one request (DefaultMaxBatch).
	MaxBatch int
	// Timeout bounds one request (DefaultTimeout).
	Timeout time.Duration
	// MinBackoff and MaxBackoff pace resending proposals whose outcome
	// is unknown (DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
}

// The defaults of Config.
const (
	DefaultMaxBatch   = 5000
	DefaultTimeout    = 30 * time.Second
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 2 * time.Second
)

// Manager queues proposed ISR changes and sends them, batched, to the
// controller (see the package doc).
type Manager struct {
	cfg Config

	mu      sync.Mutex        // leaf
	queue   []item            // proposals not sent yet, oldest first
	pending map[Partition]int // each one's index in queue
	wake    chan struct{}     // one token while queue is not empty
}

// item is one queued proposal.
type item struct {
	p  Partition
	ch replica.ISRChange
}

// New returns a Manager; Run sends what it queues.
func New(cfg Config) *Manager {
	if cfg.Clock == nil {
		cfg.Clock = clock.System()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	return &Manager{cfg: cfg, pending: map[Partition]int{}, wake: make(chan struct{}, 1)}
}

// Submit queues a leader's proposed ISR for Run, replacing the
// partition's proposal, in its place, if one is still queued. It never
// blocks.
func (m *Manager) Submit(p Partition, ch replica.ISRChange) {
	m.mu.Lock()
	if i, queued := m.pending[p]; queued {
		m.queue[i].ch = ch
	} else {
		m.pending[p] = len(m.queue)
		m.queue = append(m.queue, item{p, ch})
	}
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// take takes the oldest MaxBatch queued proposals, or all of them.
func (m *Manager) take() []item {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := min(len(m.queue), m.cfg.MaxBatch)
	out := slices.Clone(m.queue[:n])
	for _, it := range out {
		delete(m.pending, it.p)
	}
	m.queue = slices.Delete(m.queue, 0, n)
	for i, it := range m.queue {
		m.pending[it.p] = i
	}
	return out
}

// requeue queues again a proposal whose outcome is unknown, unless its
// partition proposed something newer meanwhile.
func (m *Manager) requeue(it item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, newer := m.pending[it.p]; !newer {
		m.pending[it.p] = len(m.queue)
		m.queue = append(m.queue, it)
	}
}

// Run sends queued proposals, one request at a time, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	backoff := m.cfg.MinBackoff
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		for ctx.Err() == nil {
			batch := m.take()
			if len(batch) == 0 {
				break
			}
			results := m.send(ctx, batch)
			unknown := 0
			for i, it := range batch {
				if it.p.CompleteISRChange(it.ch, results[i]) {
					unknown++
					m.requeue(it)
				}
			}
			if unknown == 0 {
				backoff = m.cfg.MinBackoff
				continue
			}
			m.cfg.Logger.Info("ISR changes with an unknown outcome; resending", "partitions", unknown, "after", backoff)
			if !m.sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, m.cfg.MaxBackoff)
		}
	}
}

// sleep waits d on the Manager's clock; false when ctx ended first.
func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	done := make(chan struct{})
	t := m.cfg.Clock.AfterFunc(d, func() { close(done) })
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-done:
		return true
	}
}

// send sends one AlterPartition for a batch of proposals and returns
// each one's outcome, in order.
func (m *Manager) send(ctx context.Context, batch []item) []replica.ISRChangeResult {
	req := m.request(batch)
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	resp, err := m.cfg.Host.AlterPartition(ctx, req)
	if err == nil && resp == nil {
		err = errNoAnswer
	}
	if err == nil {
		if code := resp.ErrorCode; code != 0 {
			err = kerr.ErrorForCode(code)
		}
	}
	if err != nil {
		results := make([]replica.ISRChangeResult, len(batch))
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	return results(batch, resp)
}

// request is the AlterPartition for a batch of proposals.
func (m *Manager) request(batch []item) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3 // topic ids and broker epochs (KIP-903)
	req.BrokerID = m.cfg.BrokerID
	req.BrokerEpoch = m.cfg.Host.BrokerEpoch()
	topicAt := map[[16]byte]int{}
	for _, it := range batch {
		p, ch := it.p, it.ch
		i, ok := topicAt[p.TopicID()]
		if !ok {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = p.Topic(), p.TopicID()
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topicAt[p.TopicID()] = i
		}
		tp := kmsg.NewAlterPartitionRequestTopicPartition()
		tp.Partition, tp.LeaderEpoch, tp.PartitionEpoch = p.Partition(), ch.LeaderEpoch, ch.PartitionEpoch
		for j, id := range ch.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = id, -1
			if j < len(ch.BrokerEpochs) {
				e.BrokerEpoch = ch.BrokerEpochs[j]
			}
			if e.BrokerEpoch < 0 {
				if epoch, ok := m.cfg.Host.RegisteredEpoch(id); ok {
					e.BrokerEpoch = epoch
				}
			}
			tp.NewEpochISR = append(tp.NewEpochISR, e)
			tp.NewISR = append(tp.NewISR, id)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp)
	}
	return req
}

// errNoAnswer is the outcome of a request the Host returned neither an
// answer nor an error for: unknown.
var errNoAnswer = errors.New("alterpartition: no AlterPartition answer")

// errMissing is the outcome of a proposal the answer does not mention:
// unknown, so it is sent again.
var errMissing = errors.New("alterpartition: AlterPartition answer without the partition")

// results matches an answer's partitions to the batch's proposals, in
// order. Topics are matched by id, or by name where the answer carries
// no id.
func results(batch []item, resp *kmsg.AlterPartitionResponse) []replica.ISRChangeResult {
	type key struct {
		topic     [16]byte
		partition int32
	}
	ids := map[string][16]byte{}
	for _, it := range batch {
		ids[it.p.Topic()] = it.p.TopicID()
	}
	got := map[key]replica.ISRChangeResult{}
	for _, rt := range resp.Topics {
		id := rt.TopidID // sic: kmsg's name for the v2+ topic id
		if id == ([16]byte{}) {
			id = ids[rt.Topic]
		}
		for _, rp := range rt.Partitions {
			got[key{id, rp.Partition}] = replica.ISRChangeResult{
				Err: kerr.ErrorForCode(rp.ErrorCode), LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch, ISR: rp.ISR,
			}
		}
	}
	out := make([]replica.ISRChangeResult, len(batch))
	for i, it := range batch {
		res, ok := got[key{it.p.TopicID(), it.p.Partition()}]
		if !ok {
			res.Err = errMissing
		}
		out[i] = res
	}
	return out
}
