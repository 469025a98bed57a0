package group

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offset commits (TxnOffsetCommit, KIP-98 and KIP-447). A
// transactional producer commits a group's offsets inside its
// transaction: the records go to the group's __consumer_offsets partition
// in a transactional batch of the producer, and stay pending until the
// transaction's marker lands in that partition. A COMMIT marker makes them
// the group's committed offsets (unless a plain commit of the same
// partition was written after them); an ABORT marker drops them. While a
// partition has pending offsets, OffsetFetch with RequireStable answers it
// UNSTABLE_OFFSET_COMMIT, and the partition's committed offset does not
// expire. Replay rebuilds the pending offsets from the transactional
// records and resolves them with the markers that follow.

// TxnStore is a Store that also writes transactional offset commits. The
// broker implements it over __consumer_offsets; TxnOffsetCommit needs it.
type TxnStore interface {
	Store
	// AppendTxn appends recs, all of the named group, as one
	// transactional batch of the producer (KIP-890's verification, if
	// any, already done by the caller) and waits until it is committed,
	// as Store.Append does. Errors wrap the Kafka code of the failed
	// append (INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, ...).
	AppendTxn(ctx context.Context, group string, producerID int64, producerEpoch int16, recs []Record) error
}

// Control record layout (Kafka's ControlRecordType): the key is (version
// int16, type int16), type 0 an ABORT marker, 1 a COMMIT marker.
const (
	controlAbort  int16 = 0
	controlCommit int16 = 1
)

// markerOutcome reads a replayed control record's key: the marker's
// outcome, and false for a control record that is not a transaction
// marker.
func markerOutcome(key []byte) (commit, ok bool) {
	if len(key) < 4 {
		return false, false
	}
	switch int16(binary.BigEndian.Uint16(key[2:4])) {
	case controlCommit:
		return true, true
	case controlAbort:
		return false, true
	}
	return false, false
}

// pendingOffsets are one producer's uncommitted offsets in one group.
type pendingOffsets map[string]map[int32]*offsetValue

// TxnOffsetCommit handles TxnOffsetCommit (key 28) v0-5. The group's
// generation and member are checked as Kafka 4.3 checks them (a failure
// fails the whole request); the producer's epoch and transaction are
// checked by the append (the broker verifies the transaction, KIP-890,
// before calling). Topics unknown to Topics fail with
// UNKNOWN_TOPIC_OR_PARTITION, as the broker's API layer does in Kafka.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	fail := func(code int16) *kmsg.TxnOffsetCommitResponse {
		r := kmsg.NewPtrTxnOffsetCommitResponse()
		r.Version = req.Version
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	check := func() int16 {
		if _, ok := c.cfg.Store.(TxnStore); !ok {
			c.cfg.Logger.Warn("TxnOffsetCommit refused: the offsets store cannot write transactional batches", attrGroup, req.Group)
			return kerr.CoordinatorNotAvailable.Code
		}
		return 0
	}
	resp, err := oneGroup(c, ctx, req.Group, check, fail,
		func(s *shard, reply func(*kmsg.TxnOffsetCommitResponse)) { reply(s.txnOffsetCommit(req)) })
	if err != nil {
		return nil, err
	}
	if req.Version < 2 {
		// Clients that predate it retry COORDINATOR_NOT_AVAILABLE.
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
					p.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
	}
	return resp, nil
}

// CompleteTransaction applies a transaction marker written to
// __consumer_offsets partition: the producer's pending offsets in the
// groups of that partition become committed (commit) or are dropped. The
// broker calls it once the marker is written (and before it answers the
// WriteTxnMarkers request, so that the producer's next transaction cannot
// commit offsets first). Repeating it is harmless.
func (c *Coordinator) CompleteTransaction(ctx context.Context, partition int32, producerID int64, commit bool) error {
	if c.state.Load() != stateRunning {
		return kerr.NotCoordinator
	}
	done := make(chan struct{}, len(c.shards))
	for _, s := range c.shards {
		if !s.enqueue(ctx, func(s *shard) {
			s.completeTxn(producerID, commit, s.inPartition(partition))
			done <- struct{}{}
		}) {
			if err := ctx.Err(); err != nil {
				return err
			}
			return kerr.NotCoordinator
		}
	}
	for range c.shards {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.shards[0].done:
			return kerr.NotCoordinator
		}
	}
	return nil
}

// inPartition selects the groups of a __consumer_offsets partition.
func (s *shard) inPartition(partition int32) func(string) bool {
	if s.cfg.PartitionOf == nil {
		return func(string) bool { return true }
	}
	return func(g string) bool { return s.cfg.PartitionOf(g) == partition }
}

// nextSeq numbers offset records in the order they were written (or
// replayed), which is their order in the group's partition: a committed
// transaction's offset replaces a partition's offset only if it was
// written after it.
func (s *shard) nextSeq() uint64 {
	s.seq++
	return s.seq
}

func (s *shard) txnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Version = req.Version
	type target struct {
		topic string
		id    topicID
		p     *kmsg.TxnOffsetCommitRequestTopicPartition
		code  *int16
	}
	var targets []target
	for ti := range req.Topics {
		rt := &req.Topics[ti]
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.TxnOffsetCommitResponseTopicPartition, len(rt.Partitions))
		name, id, info, code := s.resolveCommitTopic(0, rt.Topic, topicID{})
		for pi := range rt.Partitions {
			p := &rt.Partitions[pi]
			sp := &st.Partitions[pi]
			*sp = kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = p.Partition
			if sp.ErrorCode = partitionCode(info, code, p.Partition); sp.ErrorCode == 0 {
				targets = append(targets, target{topic: name, id: id, p: p, code: &sp.ErrorCode})
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(targets) == 0 {
		return resp
	}
	failAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		for _, t := range targets {
			*t.code = code
		}
		return resp
	}

	g := s.groups[req.Group]
	var check func(topicID, int32) int16
	switch {
	case g == nil && req.Generation >= 0:
		return failAll(kerr.IllegalGeneration.Code)
	case g == nil:
		// A producer committing for a consumer that manages its own
		// partitions: a simple group holds the offsets.
	case g.streams != nil:
		if code := validateStreamsTxnCommit(g.streams, req); code != 0 {
			return failAll(code)
		}
	case g.consumer != nil:
		var code int16
		code, check = s.validateConsumerTxnCommit(g, req)
		if code != 0 {
			return failAll(code)
		}
	default:
		if code := validateClassicTxnCommit(g.classic, req); code != 0 {
			return failAll(code)
		}
	}

	now := s.now()
	var recs []Record
	var applied []target
	var values []*offsetValue
	for _, t := range targets {
		v, code := s.commitValue(t.p.Offset, t.p.LeaderEpoch, req.Version >= 2, t.p.Metadata, t.id, now)
		if code != 0 {
			*t.code = code
			continue
		}
		if check != nil {
			// An older member epoch commits only partitions it held then
			// (KIP-1251); one that did not fails the whole request.
			if t.id == (topicID{}) || check(t.id, t.p.Partition) != 0 {
				return failAll(kerr.IllegalGeneration.Code)
			}
		}
		recs = append(recs, encodeRecord(decodedRecord{kind: recOffset, group: req.Group, topic: t.topic, partition: t.p.Partition, offset: v}))
		applied = append(applied, t)
		values = append(values, v)
	}
	if len(recs) == 0 {
		return resp
	}
	if err := s.appendTxn(req.Group, req.ProducerID, req.ProducerEpoch, recs); err != nil {
		s.stats.appendErrors.Add(1)
		code := appendErrorCode(err)
		for _, t := range applied {
			*t.code = code
		}
		return resp
	}
	if g == nil {
		g = newClassicGroupEntry(req.Group)
		g.classic.stateTime = now
		s.groups[req.Group] = g
	}
	for i, t := range applied {
		s.addPending(g, req.ProducerID, t.topic, t.p.Partition, values[i])
	}
	s.stats.offsetsCommitted.Add(uint64(len(applied)))
	return resp
}

func (s *shard) appendTxn(groupID string, pid int64, epoch int16, recs []Record) error {
	ts, ok := s.cfg.Store.(TxnStore)
	if !ok {
		return kerr.CoordinatorNotAvailable
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AppendTimeout)
	defer cancel()
	err := ts.AppendTxn(ctx, groupID, pid, epoch, recs)
	if err != nil {
		s.log.Warn("transactional offset commit failed", attrGroup, groupID, "producer_id", pid, "err", err)
	}
	return err
}

// validateClassicTxnCommit is Kafka 4.3's check of a transactional commit
// against a classic group: unlike a plain commit, one without member id
// and generation is accepted whatever the group's state, and a rebalance
// in progress does not refuse it.
func validateClassicTxnCommit(cg *classicGroup, req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case req.Generation < 0 && cg.state == classicEmpty:
		return 0
	case req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil:
		return 0
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != cg.generation {
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// validateConsumerTxnCommit checks a transactional commit against a
// consumer-protocol group. A stale epoch is ILLEGAL_GENERATION here (Kafka
// maps STALE_MEMBER_EPOCH to it for TxnOffsetCommit); an older epoch may
// commit the partitions it held then (the returned check).
func (s *shard) validateConsumerTxnCommit(g *group, req *kmsg.TxnOffsetCommitRequest) (int16, func(topicID, int32) int16) {
	c := g.consumer
	switch {
	case req.Generation < 0 && len(c.members) == 0:
		return 0, nil
	case req.Generation == -1 && req.MemberID == "" && req.InstanceID == nil:
		return 0, nil
	}
	m := c.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code, nil
	case req.Generation > m.epoch:
		return kerr.IllegalGeneration.Code, nil
	case req.Generation == m.epoch:
		return 0, nil
	}
	epoch := req.Generation
	return 0, func(id topicID, p int32) int16 {
		if at, ok := m.assignmentEpochOf(id, p); ok && at <= epoch {
			return 0
		}
		return kerr.IllegalGeneration.Code
	}
}

// addPending records a producer's uncommitted offset.
func (s *shard) addPending(g *group, pid int64, topic string, partition int32, v *offsetValue) {
	v.seq = s.nextSeq()
	byGroup := s.pending[pid]
	if byGroup == nil {
		byGroup = make(map[string]pendingOffsets)
		s.pending[pid] = byGroup
	}
	po := byGroup[g.id]
	if po == nil {
		po = make(pendingOffsets)
		byGroup[g.id] = po
	}
	ps := po[topic]
	if ps == nil {
		ps = make(map[int32]*offsetValue)
		po[topic] = ps
	}
	ps[partition] = v
	if g.openTxns == nil {
		g.openTxns = make(map[int64]struct{})
	}
	g.openTxns[pid] = struct{}{}
}

// hasPending reports whether a partition of the group has uncommitted
// transactional offsets.
func (s *shard) hasPending(g *group, topic string, partition int32) bool {
	for pid := range g.openTxns {
		if s.pending[pid][g.id][topic][partition] != nil {
			return true
		}
	}
	return false
}

// dropPending forgets the uncommitted offsets of a partition, as a
// tombstone of it does (OffsetDelete, DeleteGroups).
func (s *shard) dropPending(g *group, topic string, partition int32) {
	for pid := range g.openTxns {
		if ps := s.pending[pid][g.id][topic]; ps != nil {
			delete(ps, partition)
		}
	}
}

// forgetPending drops every uncommitted offset of a group being removed.
func (s *shard) forgetPending(g *group) {
	for pid := range g.openTxns {
		delete(s.pending[pid], g.id)
		if len(s.pending[pid]) == 0 {
			delete(s.pending, pid)
		}
	}
	g.openTxns = nil
}

// namedPartition is a topic name and partition.
type namedPartition struct {
	topic     string
	partition int32
}

// pendingOnly lists the partitions of a group with uncommitted offsets
// and no committed offset, whose tombstones a deletion writes too.
func (s *shard) pendingOnly(g *group) []namedPartition {
	var out []namedPartition
	seen := make(map[namedPartition]bool)
	for pid := range g.openTxns {
		for topic, ps := range s.pending[pid][g.id] {
			for p := range ps {
				k := namedPartition{topic, p}
				if g.offsets[topic][p] == nil && !seen[k] {
					seen[k] = true
					out = append(out, k)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b namedPartition) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition) - int(b.partition)
	})
	return out
}

// completeTxn applies a producer's marker to its pending offsets in the
// groups in selects.
func (s *shard) completeTxn(pid int64, commit bool, in func(string) bool) {
	byGroup := s.pending[pid]
	for id, po := range byGroup {
		if !in(id) {
			continue
		}
		delete(byGroup, id)
		g := s.groups[id]
		if g == nil {
			continue
		}
		delete(g.openTxns, pid)
		if !commit {
			continue
		}
		for topic, ps := range po {
			for p, v := range ps {
				// A plain commit written after the transaction's wins.
				if cur := g.offsets[topic][p]; cur == nil || v.seq > cur.seq {
					g.setOffset(topic, p, v)
				}
			}
		}
	}
	if len(byGroup) == 0 {
		delete(s.pending, pid)
	}
}
