package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	"weir/internal/kraft"
	"weir/internal/metadata"
	"weir/internal/replica"
)

// Replication: every local replica of a partition is an internal/replica
// Replica over its log. The metadata loop switches it to leader or
// follower as the image says; followers are fed by the replica Manager's
// fetchers (one per leader broker, over the Kafka protocol to the
// leader's listener); leaders serve followers' Fetch requests, keep the
// high watermark and propose ISR changes, which this file sends to the
// controller as AlterPartition.

// openReplica wraps a freshly opened partition log in a Replica.
//
// Its high watermark starts from the log's checkpoint (replica.Open clamps
// it to the log), or from the log end for a log whose checkpoint holds
// none (written before the checkpoint carried it): a replica that takes
// its whole log for committed could, as a new leader, show consumers
// records its followers never had.
func (b *Broker) openReplica(p *partition, minISR int) error {
	hw := p.log.EndOffset()
	if ck, ok := p.log.CheckpointedHighWatermark(); ok {
		hw = ck
	}
	r, err := replica.Open(p.log, hw, replica.Config{
		Env: b.replicaEnv(), Owner: p,
		Topic: p.topic.name, TopicID: p.topic.id, Partition: p.index, MinISR: minISR,
	})
	if err != nil {
		return err
	}
	p.rep = r
	p.hw.Store(r.HighWatermark())
	return nil
}

// replicaEnv is what every replica of this broker shares: settings and
// callbacks, which find their partition as the replica's Owner (one set
// for all, rather than closures per partition).
func (b *Broker) replicaEnv() *replica.Env {
	b.repEnvOnce.Do(func() {
		owner := func(r *replica.Replica) *partition { return r.Owner().(*partition) }
		b.repEnv = replica.NewEnv(replica.Env{
			LocalID:  b.cfg.NodeID,
			MaxLag:   b.settings().Millis(config.ReplicaLagTimeMax),
			Eligible: b.eligible,
			OnISRChange: func(r *replica.Replica, ch replica.ISRChange) {
				b.sendISRChange(owner(r), r, ch)
			},
			OnHighWatermark: func(r *replica.Replica, hw int64) {
				p := owner(r)
				p.log.NoteHighWatermark(hw)
				p.setHW(hw)
				b.cleanWhenWritten(p, hw)
			},
			// Followers parked on the log end fetch what was appended; fetch
			// sessions learn of a new log start offset.
			OnAppend:   func(r *replica.Replica) { owner(r).wakeAll() },
			OnLogStart: func(r *replica.Replica, _ int64) { owner(r).wakeAll() },
			LastFetch:  func(r *replica.Replica, id int32) time.Time { return owner(r).lastFetchBy(id) },
			Now:        b.now,
			Logger:     b.logger,
		})
	})
	return b.repEnv
}

// eligible says whether a broker may join an ISR: registered, unfenced,
// not shutting down, at the broker epoch its fetches carry (when known).
func (b *Broker) eligible(id int32, epoch int64) bool {
	br, ok := b.node.Image().Broker(id)
	if !ok || !br.Active() {
		return false
	}
	return epoch < 0 || br.Epoch == epoch
}

// roleChange is one partition's new state from the image; wake is set
// when its leader epoch changed or this node started or stopped leading
// it.
type roleChange struct {
	p    *partition
	s    metadata.Partition
	wake bool
}

// applyRoles makes local replicas leader or follower as the image says,
// with one call into the fetcher Manager for all of them: new leaders
// leave their fetchers first, then lead; followers follow, then join the
// fetchers of their leaders. Then the fetches parked on partitions whose
// leadership or leader epoch changed are woken: consumers' and followers' fetches on a
// former leader answer NOT_LEADER_OR_FOLLOWER, and followers' fetches
// held by a new leader until it applied its promotion (fetchOnce) are
// served. It runs on the metadata loop.
func (b *Broker) applyRoles(changes []roleChange) {
	defer func() {
		for _, c := range changes {
			if c.wake {
				c.p.wakeAll()
			}
		}
	}()
	var leading []*replica.Replica
	var stopping []*replica.Replica
	var follows []replica.Follow
	for _, c := range changes {
		if c.p.rep == nil {
			continue
		}
		if c.s.Leader() == b.cfg.NodeID {
			leading = append(leading, c.p.rep)
		}
	}
	if len(leading) > 0 {
		b.replicas.RemovePartitions(leading)
	}
	for _, c := range changes {
		p, s := c.p, c.s
		if p.rep == nil {
			continue
		}
		st := replica.StateOf(s)
		if s.Leader() == b.cfg.NodeID {
			if err := p.rep.BecomeLeader(st); err != nil && !errors.Is(err, replica.ErrStaleState) {
				b.logger.Warn("cannot lead", "topic", p.topic.name, "partition", p.index, "err", err)
			}
			continue
		}
		if err := p.rep.BecomeFollower(st); err != nil && !errors.Is(err, replica.ErrStaleState) {
			b.logger.Warn("cannot follow", "topic", p.topic.name, "partition", p.index, "err", err)
			continue
		}
		if s.Leader() >= 0 {
			follows = append(follows, replica.Follow{Replica: p.rep, Leader: s.Leader(), LeaderEpoch: s.LeaderEpoch()})
		} else {
			stopping = append(stopping, p.rep)
		}
	}
	if len(stopping) > 0 {
		b.replicas.RemovePartitions(stopping)
	}
	if len(follows) > 0 {
		b.replicas.AddPartitions(follows)
	}
}

// ISR changes go to the controller in batches: sendISRChange queues a
// replica's proposal (at most one per replica is in flight, the
// replica's rule) and one goroutine, isrLoop, sends everything queued as
// one AlterPartition at a time, reports each partition's outcome to its
// replica, and queues again, after a back-off, those whose outcome is
// unknown. A failover that makes thousands of partitions propose at
// once therefore costs a few requests on one connection, not a request,
// a goroutine and a connection per partition.

// isrItem is one queued proposal.
type isrItem struct {
	p  *partition
	r  *replica.Replica
	ch replica.ISRChange
}

// isrQueue holds the proposals not sent yet.
type isrQueue struct {
	mu      sync.Mutex // leaf
	pending map[*partition]isrItem
	wake    chan struct{} // one token while pending is not empty
}

// maxISRBatch bounds the partitions of one AlterPartition.
const maxISRBatch = 5000

// sendISRChange queues a leader's proposed ISR for isrLoop.
func (b *Broker) sendISRChange(p *partition, r *replica.Replica, ch replica.ISRChange) {
	b.isr.mu.Lock()
	b.isr.pending[p] = isrItem{p, r, ch}
	b.isr.mu.Unlock()
	select {
	case b.isr.wake <- struct{}{}:
	default:
	}
}

// takeISR takes up to maxISRBatch queued proposals.
func (b *Broker) takeISR() []isrItem {
	b.isr.mu.Lock()
	defer b.isr.mu.Unlock()
	var out []isrItem
	for p, it := range b.isr.pending {
		if len(out) == maxISRBatch {
			break
		}
		out = append(out, it)
		delete(b.isr.pending, p)
	}
	return out
}

// isrLoop sends queued ISR changes until the broker closes.
func (b *Broker) isrLoop() {
	defer b.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.isr.wake:
		}
		for b.ctx.Err() == nil {
			batch := b.takeISR()
			if len(batch) == 0 {
				break
			}
			results := b.alterPartitions(batch)
			unknown := 0
			for i, it := range batch {
				if it.r.CompleteISRChange(it.ch, results[i]) {
					unknown++
					b.isr.mu.Lock()
					if _, newer := b.isr.pending[it.p]; !newer {
						b.isr.pending[it.p] = it
					}
					b.isr.mu.Unlock()
				}
			}
			if unknown == 0 {
				backoff = 100 * time.Millisecond
				continue
			}
			b.logger.Info("ISR changes with an unknown outcome; resending", "partitions", unknown, "after", backoff)
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
		}
	}
}

// alterPartitions sends one AlterPartition for a batch of proposals and
// returns each one's outcome, in order.
func (b *Broker) alterPartitions(batch []isrItem) []replica.ISRChangeResult {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3 // topic ids and broker epochs (KIP-903)
	req.BrokerID = b.cfg.NodeID
	if b.life != nil {
		req.BrokerEpoch = b.life.Epoch()
	}
	img := b.node.Image()
	topicAt := map[[16]byte]int{}
	for _, it := range batch {
		p, ch := it.p, it.ch
		i, ok := topicAt[p.topic.id]
		if !ok {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = p.topic.name, p.topic.id
			req.Topics = append(req.Topics, t)
			i = len(req.Topics) - 1
			topicAt[p.topic.id] = i
		}
		tp := kmsg.NewAlterPartitionRequestTopicPartition()
		tp.Partition, tp.LeaderEpoch, tp.PartitionEpoch = p.index, ch.LeaderEpoch, ch.PartitionEpoch
		for j, id := range ch.NewISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = id, -1
			if j < len(ch.BrokerEpochs) {
				e.BrokerEpoch = ch.BrokerEpochs[j]
			}
			if e.BrokerEpoch < 0 {
				if br, ok := img.Broker(id); ok {
					e.BrokerEpoch = br.Epoch
				}
			}
			tp.NewEpochISR = append(tp.NewEpochISR, e)
			tp.NewISR = append(tp.NewISR, id)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, tp)
	}
	results := make([]replica.ISRChangeResult, len(batch))
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	resp, err := b.ctl.Admin(ctx, req)
	if err == nil {
		if code := resp.(*kmsg.AlterPartitionResponse).ErrorCode; code != 0 {
			err = kerr.ErrorForCode(code)
		}
	}
	if err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	type key struct {
		topic     [16]byte
		partition int32
	}
	ids := map[string][16]byte{}
	for _, it := range batch {
		ids[it.p.topic.name] = it.p.topic.id
	}
	got := map[key]replica.ISRChangeResult{}
	for _, rt := range resp.(*kmsg.AlterPartitionResponse).Topics {
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
	for i, it := range batch {
		res, ok := got[key{it.p.topic.id, it.p.index}]
		if !ok {
			res.Err = errors.New("broker: AlterPartition answer without the partition")
		}
		results[i] = res
	}
	return results
}

// shrinkLoop asks every led partition, every replica.lag.time.max.ms/2,
// whether a follower fell out of the ISR.
func (b *Broker) shrinkLoop() {
	defer b.wg.Done()
	for {
		every := b.settings().Millis(config.ReplicaLagTimeMax) / 2
		if every <= 0 {
			every = 15 * time.Second
		}
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(every):
		}
		for _, p := range b.ledReplicas() {
			p.rep.MaybeShrinkISR()
		}
	}
}

// ledReplicas lists the local partitions this node leads.
func (b *Broker) ledReplicas() []*partition {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*partition
	for _, t := range b.topics {
		for _, p := range t.partitions {
			if p.rep != nil && p.isLeader() {
				out = append(out, p)
			}
		}
	}
	return out
}

// brokerTransport sends the fetchers' requests to other brokers' Kafka
// listeners, one controller-protocol client per broker.
type brokerTransport struct {
	b       *Broker
	mu      sync.Mutex
	clients map[int32]*kraft.KafkaClient
}

func (t *brokerTransport) Send(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	t.mu.Lock()
	c := t.clients[id]
	if c == nil {
		c = kraft.NewKafkaClient(kraft.KafkaClientConfig{
			Leader:   func() int32 { return id },
			Resolve:  kraft.ListenerResolver(t.b.node, t.b.interBrokerListener),
			Dial:     t.b.cfg.InterBrokerDial,
			ClientID: "weir-replica-" + itoa(t.b.cfg.NodeID),
			Logger:   t.b.logger,
		})
		t.clients[id] = c
	}
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.Request(ctx, req)
}

func (t *brokerTransport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.clients {
		c.Close()
	}
	t.clients = nil
}

// minISROf is a topic's min.insync.replicas.
func (b *Broker) minISROf(configs map[string]string) int {
	t, err := b.settings().Topic(configs)
	if err != nil {
		return 1
	}
	return t.MinInsyncReplicas()
}
