package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/config"
	wlog "weir/internal/log"
	"weir/internal/metadata"
	"weir/internal/replica"
)

// Replication: every local replica of a partition is an internal/replica
// Replica over its log. The metadata loop switches it to leader or
// follower as the image says; followers are fed by the replica Manager's
// fetchers (one per leader broker, over the Kafka protocol to the
// leader's listener); leaders serve followers' Fetch requests, keep the
// high watermark and propose ISR changes, which internal/alterpartition
// sends to the controller as AlterPartition.

// openPartition opens the log of one partition and the Replica over it;
// with lazy, a never-written partition has no files and its replica holds
// the blank log of its settings until OwnLog opens it (OpenLog) to write.
// The log drives the producer state, made (logEnv) with its body. The
// high watermark starts from the log's checkpoint (replica.Open clamps
// it), or from the log end for a log whose checkpoint holds none (written
// before it carried one): a replica that takes its whole log for
// committed could, as a new leader, show records its followers never had.
func (b *Broker) openPartition(t *topic, i int32, cfg wlog.Config, lazy bool, minISR int) (*partition, error) {
	l, err := wlog.Open(partitionDir(b.cfg.DataDir, t.name, i), cfg, wlog.Options{Env: b.logEnv, Lazy: lazy})
	if err != nil {
		return nil, fmt.Errorf("broker: open %s-%d: %w", t.name, i, err)
	}
	hw := l.EndOffset()
	if ck, ok := l.CheckpointedHighWatermark(); ok {
		hw = ck
	}
	p := &partition{topic: t, index: i}
	if p.rep, err = replica.Open(l, hw, replica.Config{Owner: p, MinISR: minISR}); err != nil {
		l.Close()
		return nil, err
	}
	return p, nil
}

// replicaEnv is what every replica of this broker shares: settings and
// callbacks, which find their partition as the replica's Owner (one set
// for all, rather than closures per partition).
func (b *Broker) replicaEnv() *replica.Env {
	b.repEnvOnce.Do(func() {
		owner := func(r *replica.Replica) *partition { return r.Owner().(*partition) }
		b.repEnv = replica.NewEnv(replica.Env{
			LocalID:     b.cfg.NodeID,
			MaxLag:      b.settings().Millis(config.ReplicaLagTimeMax),
			Eligible:    replica.EligibleIn(b.node.Image),
			OnISRChange: func(r *replica.Replica, ch replica.ISRChange) { b.isr.Submit(r, ch) },
			OnHighWatermark: func(r *replica.Replica, hw int64) {
				p := owner(r) // the replica noted hw in its log
				p.wakeAll()
				b.cleanWhenWritten(p, hw)
			},
			// Followers parked on the log end fetch what was appended; fetch
			// sessions learn of a new log start offset.
			OnAppend:   func(r *replica.Replica) { owner(r).wakeAll() },
			OnLogStart: func(r *replica.Replica, _ int64) { owner(r).wakeAll() },
			LastFetch:  func(r *replica.Replica, id int32) time.Time { return owner(r).lastFetchBy(id) },
			OpenLog: func(r *replica.Replica, cfg wlog.Config) (*wlog.Log, error) {
				return wlog.Open(partitionDir(b.cfg.DataDir, owner(r).topic.name, owner(r).index), cfg, wlog.Options{Env: b.logEnv, Lazy: true}) // OwnLog
			},
			Now:    b.now,
			Logger: b.logger,
		})
	})
	return b.repEnv
}

// roleChange is one partition's new state from the image; wake is set
// when its leader epoch changed or this node started or stopped leading
// it.
type roleChange struct {
	p     *partition
	s     metadata.Partition
	wake  bool
	apply bool // the replica's role and state are applied (the update changed them)
}

// applyRoles makes local replicas leader or follower as the image says
// (replica.Manager.ApplyRoles). Then the fetches parked on partitions
// whose leadership or leader epoch changed are woken: consumers' and
// followers' fetches on a former leader answer NOT_LEADER_OR_FOLLOWER,
// and followers' fetches held by a new leader until it applied its
// promotion (fetchOnce) are served. It runs on the metadata loop.
func (b *Broker) applyRoles(changes []roleChange) {
	roles := make([]replica.RoleChange, 0, len(changes))
	for _, c := range changes {
		if c.p.rep != nil && c.apply {
			roles = append(roles, replica.RoleChange{Replica: c.p.rep, State: replica.StateOf(c.s)})
		}
	}
	b.replicas.ApplyRoles(roles)
	for _, c := range changes {
		if c.wake {
			c.p.wakeAll()
		}
	}
}

// alterPartitionHost is the broker as internal/alterpartition's Manager
// sees it: AlterPartition goes to the active controller, and the ISR
// members' broker epochs come from the registration and the image.
type alterPartitionHost struct{ b *Broker }

func (h alterPartitionHost) AlterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) (*kmsg.AlterPartitionResponse, error) {
	resp, err := h.b.ctl.Admin(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.AlterPartitionResponse), nil
}

func (h alterPartitionHost) BrokerEpoch() int64 {
	if h.b.life == nil {
		return -1
	}
	return h.b.life.Epoch()
}

func (h alterPartitionHost) RegisteredEpoch(id int32) (int64, bool) {
	br, ok := h.b.node.Image().Broker(id)
	if !ok {
		return -1, false
	}
	return br.Epoch, true
}

// ledReplicas lists the local replicas of the partitions this node
// leads, for replica.ExpireISR.
func (b *Broker) ledReplicas() []*replica.Replica {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []*replica.Replica
	for _, t := range b.topics {
		for _, p := range t.partitions {
			if p.rep != nil && p.isLeader() {
				out = append(out, p.rep)
			}
		}
	}
	return out
}

// minISROf is a topic's min.insync.replicas.
func (b *Broker) minISROf(configs map[string]string) int {
	t, err := b.settings().Topic(configs)
	if err != nil {
		return 1
	}
	return t.MinInsyncReplicas()
}
