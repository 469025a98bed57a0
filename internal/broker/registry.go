package broker

import (
	"maps"
	"os"
	"slices"

	"weir/internal/configadmin"
	"weir/internal/kraft"
	"weir/internal/metadata"
	"weir/internal/nullstore"
	"weir/internal/parallel"
	"weir/internal/replica"
)

// The broker's topic registry (Broker.topics) is a projection of the
// metadata image: every topic and partition the image holds, with a log
// for each partition this node replicates. One goroutine, metadataLoop,
// applies each update of the replicated metadata log to it in log order;
// request handlers only read it.

// metadataLoop follows the applied metadata log until the broker closes.
func (b *Broker) metadataLoop(sub *kraft.Subscription) {
	defer b.wg.Done()
	defer sub.Close()
	for {
		u, err := sub.Next(b.ctx)
		if err != nil {
			return
		}
		b.applyUpdate(u)
	}
}

// applyUpdate brings the registry to u's image.
func (b *Broker) applyUpdate(u kraft.Update) {
	b.applyMu.Lock()
	locked := true
	defer func() {
		if locked {
			b.applyMu.Unlock()
		}
	}()
	img := u.Image
	offsetsBefore := b.ledOffsetsPartitions()
	topicsChanged := false
	// The update's role changes are applied together once its topics are
	// in the registry: one call into the fetchers per update, however
	// many topics it touches, so a leadership move of thousands of
	// partitions interrupts each follower's fetch once.
	var roles []roleChange
	if u.Resync || u.Delta == nil {
		topicsChanged = b.reconcileAll(img, &roles)
		b.applyBrokerConfigs(img)
	} else {
		d := u.Delta
		for _, t := range d.TopicsDeleted {
			b.removeTopic(t.ID(), true)
			topicsChanged = true
		}
		// The partitions each topic changed: only theirs are applied to
		// the replicas again (nil: every partition of a created topic).
		seen := map[metadata.TopicID]map[int32]bool{}
		for _, t := range d.TopicsCreated {
			seen[t.ID()] = nil
		}
		for _, pd := range d.Partitions {
			id := pd.Topic.ID()
			if only, ok := seen[id]; !ok || only != nil {
				if only == nil {
					only = map[int32]bool{}
					seen[id] = only
				}
				only[pd.Partition] = true
			}
		}
		for id, only := range seen {
			if t, ok := img.Topic(id); ok {
				if b.reconcileTopic(img, t, only, &roles) {
					topicsChanged = true
				}
			}
		}
		brokerConfigs := false
		for _, res := range d.Configs {
			switch res.Type {
			case metadata.ResourceTopic:
				b.reconcileTopicConfigs(img, res.Name)
			case metadata.ResourceBroker:
				brokerConfigs = true
			case metadata.ResourceGroup:
				b.shares.ApplyGroupConfigs(res.Name, img.Configs(res))
			}
		}
		if brokerConfigs {
			b.applyBrokerConfigs(img)
		}
	}
	b.applyRoles(roles)
	if u.Delta != nil && !u.Resync {
		b.wakeForEligible(img, u.Delta.Brokers)
	}
	b.img.Store(img)
	b.applyMu.Unlock()
	locked = false
	b.signalRegistry()
	if !b.started.Load() {
		return
	}
	if topicsChanged {
		if g := b.coord(); g != nil {
			g.TopicsChanged()
		}
	}
	if !slices.Equal(offsetsBefore, b.ledOffsetsPartitions()) {
		b.reloadGroups()
	}
	b.txnLeadershipChanged()
}

// wakeForEligible reads again, for every fetch session, each led
// partition whose ISR lacks a broker that the update made eligible to
// join it (registered at a new epoch, or unfenced). A follower's fetch
// that reached the leader before the leader's image had it eligible
// proposed no ISR expansion; when the partition is idle its incremental
// fetches name nothing, so only a read of the partition for it puts it
// back in the ISR (and, until then, a follower counted as caught up
// holds the high watermark at its fetch offset).
func (b *Broker) wakeForEligible(img *metadata.Image, brokers []metadata.BrokerDelta) {
	var ids []int32
	for _, d := range brokers {
		if d.New != nil && d.New.Active() && (d.Old == nil || !d.Old.Active() || d.Old.Epoch != d.New.Epoch) {
			ids = append(ids, d.ID)
		}
	}
	if len(ids) == 0 {
		return
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, t := range b.topics {
		mt, ok := img.Topic(t.id)
		if !ok {
			continue
		}
		for _, p := range t.partitions {
			if p.rep == nil || !p.isLeader() {
				continue
			}
			s, ok := mt.Partition(p.index)
			if !ok {
				continue
			}
			for _, id := range ids {
				if slices.Contains(s.Replicas(), id) && !slices.Contains(s.ISR(), id) {
					p.wakeAll()
					break
				}
			}
		}
	}
}

// reconcileAll makes the registry match img as a whole, adding the role
// changes to roles.
func (b *Broker) reconcileAll(img *metadata.Image, roles *[]roleChange) bool {
	changed := false
	b.mu.RLock()
	var gone []metadata.TopicID
	for id := range b.topicsByID {
		if _, ok := img.Topic(id); !ok {
			gone = append(gone, id)
		}
	}
	b.mu.RUnlock()
	for _, id := range gone {
		b.removeTopic(id, true)
		changed = true
	}
	img.EachTopic(func(t *metadata.Topic) bool {
		if b.reconcileTopic(img, t, nil, roles) {
			changed = true
		}
		b.reconcileTopicConfigs(img, t.Name())
		return true
	})
	for _, res := range img.ConfigResources() {
		if res.Type == metadata.ResourceGroup {
			b.shares.ApplyGroupConfigs(res.Name, img.Configs(res))
		}
	}
	return changed
}

// reconcileTopic brings one topic of the registry to its state in img,
// opening the logs of partitions this node now replicates and closing
// (and removing) those it no longer does, and adds the replicas' role
// changes to roles (the caller applies them). It reports whether the
// topic is new or changed its partition count.
func (b *Broker) reconcileTopic(img *metadata.Image, mt *metadata.Topic, only map[int32]bool, roles *[]roleChange) bool {
	self := b.cfg.NodeID
	b.mu.RLock()
	old := b.topicsByID[mt.ID()]
	var oldParts []*partition
	if old != nil {
		oldParts = old.partitions
	}
	b.mu.RUnlock()
	t := old
	if t == nil {
		t = &topic{name: mt.Name(), id: mt.ID(), internal: metadata.InternalTopic(mt.Name()), self: self,
			configs: configadmin.TopicOverrides(img, mt.Name()), env: b.replicaEnv()}
	}
	cfg, err := b.topicLogConfig(t.configs)
	if err != nil {
		b.logger.Warn("topic configs do not apply; using the broker defaults", "topic", t.name, "err", err)
		cfg, _ = b.topicLogConfig(nil)
	}
	minISR := b.minISROf(t.configs)
	parts := make([]*partition, mt.NumPartitions())
	var stopped []*partition
	// The logs this node starts replicating are opened side by side: a
	// restart reopens thousands, each a few reads (and an fsync after a
	// kill), which one at a time leave the disk idle in between.
	var toOpen []int32
	mt.EachPartition(func(i int32, s metadata.Partition) bool {
		if slices.Contains(s.Replicas(), self) && (int(i) >= len(oldParts) || oldParts[i] == nil || oldParts[i].rep == nil) {
			toOpen = append(toOpen, i)
		}
		return true
	})
	type openedPart struct {
		p   *partition
		err error
	}
	opened := make([]openedPart, len(toOpen))
	parallel.Do(len(toOpen), openWorkers, func(k int) {
		opened[k].p, opened[k].err = b.openPartition(t, toOpen[k], cfg, true, minISR)
	})
	mt.EachPartition(func(i int32, s metadata.Partition) bool {
		var p *partition
		if int(i) < len(oldParts) {
			p = oldParts[i]
		}
		local := slices.Contains(s.Replicas(), self)
		fresh := false // its log opened now
		switch {
		case p != nil && local == (p.rep != nil):
		case local:
			fresh = true
			if p != nil {
				stopped = append(stopped, p) // a placeholder
			}
			var np *partition
			var err error
			if k, ok := slices.BinarySearch(toOpen, i); ok {
				np, err = opened[k].p, opened[k].err
			} else {
				np, err = b.openPartition(t, i, cfg, true, minISR)
			}
			if err == nil {
				if b.cfg.NullStorage {
					b.openNull(np)
				}
				b.cleanWhenWritten(np, np.highWatermark())
			}
			if err != nil {
				b.logger.Error("cannot open a partition this node replicates", "topic", t.name, "partition", i, "err", err)
				np = &partition{topic: t, index: i}
			}
			p = np
		default:
			if p != nil && p.rep != nil {
				stopped = append(stopped, p)
			}
			p = &partition{topic: t, index: i}
		}
		moved := p.setState(s)
		// A led partition whose ISR lacks a replica is read again for
		// every fetch session: a follower that is caught up and idle
		// names nothing in its incremental fetches, and only a read of
		// the partition for it can put it back in the ISR.
		wake := moved || (s.Leader() == self && len(s.ISR()) < len(s.Replicas()))
		// A partition the update did not change is not applied again:
		// at 50,000 partitions each ISR change of one partition cost
		// every follower of the topic a pass over all its replicas. (One
		// whose leadership moved is in the delta; applied regardless.)
		apply := only == nil || only[i] || fresh || moved
		if apply || wake {
			*roles = append(*roles, roleChange{p, s, wake, apply})
		}
		parts[i] = p
		return true
	})
	b.mu.Lock()
	t.partitions = parts
	b.topics[t.name] = t
	b.topicsByID[t.id] = t
	b.mu.Unlock()
	for _, p := range stopped {
		b.dropPartition(p, true)
	}
	if old == nil {
		b.logger.Info("topic", "topic", t.name, "partitions", len(parts))
	}
	return old == nil || len(oldParts) != len(parts)
}

// removeTopic drops a topic from the registry and its local logs.
func (b *Broker) removeTopic(id metadata.TopicID, deleteData bool) {
	b.mu.Lock()
	t := b.topicsByID[id]
	if t == nil {
		b.mu.Unlock()
		return
	}
	delete(b.topicsByID, id)
	if b.topics[t.name] == t {
		delete(b.topics, t.name)
	}
	parts := t.partitions
	b.mu.Unlock()
	for _, p := range parts {
		b.dropPartition(p, deleteData)
	}
	b.logger.Info("topic deleted", "topic", t.name)
}

// dropPartition closes a local log that is no longer this node's (and
// removes its data), and wakes fetches parked on it.
func (b *Broker) dropPartition(p *partition, deleteData bool) {
	p.setLeadership(-1, p.leaderEpoch())
	p.wakeAll()
	if v, ok := b.nulls.LoadAndDelete(p); ok {
		v.(*nullstore.Partition).Close()
	}
	if p.rep == nil {
		return
	}
	// Produce requests waiting for this leader's high watermark answer
	// NOT_LEADER_OR_FOLLOWER now, not at their timeout.
	p.rep.Stop()
	b.replicas.RemovePartitions([]*replica.Replica{p.rep})
	b.stopCleaning(p, deleteData)
	l := p.log()
	l.Close()
	if deleteData {
		if err := os.RemoveAll(l.Dir()); err != nil {
			b.logger.Warn("could not remove partition directory", "topic", p.topic.name, "partition", p.index, "err", err)
		}
	}
}

// reconcileTopicConfigs applies a topic's overrides from img.
func (b *Broker) reconcileTopicConfigs(img *metadata.Image, name string) {
	next := configadmin.TopicOverrides(img, name)
	b.mu.Lock()
	t := b.topics[name]
	if t == nil || maps.Equal(t.configs, next) {
		b.mu.Unlock()
		return
	}
	t.configs = next
	parts := t.partitions
	b.mu.Unlock()
	if err := b.applyTopicConfigs(t, next, parts); err != nil {
		b.logger.Warn("topic configs not applied", "topic", name, "err", err)
	}
}

// applyBrokerConfigs has the config service take the dynamic broker
// configs (cluster defaults and this node's) from img and applies the
// resulting topic defaults.
func (b *Broker) applyBrokerConfigs(img *metadata.Image) {
	st, nst, changed := b.cfgAdmin.ApplyBrokerConfigs(img)
	if !changed {
		return
	}
	if b.cfg.OnBrokerConfig != nil {
		b.cfg.OnBrokerConfig(nst)
	}
	b.reconfigureCleaner(st, nst)
	b.mu.RLock()
	type target struct {
		t         *topic
		overrides map[string]string
		parts     []*partition
	}
	var targets []target
	for _, t := range b.topics {
		targets = append(targets, target{t, t.configs, t.partitions})
	}
	b.mu.RUnlock()
	for _, tg := range targets {
		if err := b.applyTopicConfigs(tg.t, tg.overrides, tg.parts); err != nil {
			b.logger.Warn("could not apply new broker defaults", "topic", tg.t.name, "err", err)
		}
	}
}

// ledOffsetsPartitions lists the __consumer_offsets partitions this node
// leads.
func (b *Broker) ledOffsetsPartitions() []int32 {
	t := b.lookupTopic(offsetsTopic)
	if t == nil {
		return nil
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var led []int32
	for _, p := range t.partitions {
		if p.isLeader() {
			led = append(led, p.index)
		}
	}
	return led
}

// reloadGroups replaces the group coordinator when the set of
// __consumer_offsets partitions this node leads changed: the new one
// loads the groups of the partitions led now. Members of groups that
// moved rejoin elsewhere, as after a coordinator move in Kafka.
func (b *Broker) reloadGroups() {
	b.grpMu.Lock()
	defer b.grpMu.Unlock()
	g, err := b.newGroupCoordinator()
	if err != nil {
		b.logger.Error("group coordinator not reloaded", "err", err)
		return
	}
	if old := b.grp.Swap(g); old != nil {
		old.Close()
	}
	b.logger.Info("group coordinator reloaded", "offsets_partitions", b.ledOffsetsPartitions())
	if err := b.shares.LoadGroups(b.ctx); err != nil {
		b.logger.Error("share groups not loaded", "err", err)
	}
}

// coordinatorPartition is the __consumer_offsets partition a group's
// records go to.
func (b *Broker) coordinatorPartition(groupID string) (*partition, bool) {
	t := b.lookupTopic(offsetsTopic)
	if t == nil {
		return nil, false
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if len(t.partitions) == 0 {
		return nil, false
	}
	return t.partitions[groupPartition(groupID, len(t.partitions))], true
}

// coordinates reports whether this node coordinates the group: it leads
// the group's __consumer_offsets partition and its group coordinator has
// loaded that partition (between a partition's election here and the
// reload that follows, the coordinator in place knows none of its groups).
func (b *Broker) coordinates(groupID string) bool {
	p, ok := b.coordinatorPartition(groupID)
	c := b.coord()
	return ok && p.isLeader() && c != nil && c.Serves(p.index)
}
