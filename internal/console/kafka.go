package console

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client"
)

// ErrNotServed is an API the brokers do not serve.
var ErrNotServed = errors.New("console: the brokers do not serve this API")

// kafkaCluster is Cluster over weir's client: the typed Admin methods
// where they exist, Admin.Request with kmsg for the rest, a Consumer per
// record browse and one Producer for test records.
type kafkaCluster struct {
	props   map[string]string
	admin   *client.Admin
	timeout time.Duration

	mu       sync.Mutex
	producer *client.Producer // made on the first Produce
	closed   bool
}

// NewKafkaCluster connects (lazily) to the brokers at bootstrap, a
// host:port list. props are extra client properties (security, client
// id) given to every client it makes.
func NewKafkaCluster(bootstrap string, props map[string]string) (Cluster, func(), error) {
	p := map[string]string{"bootstrap.servers": bootstrap, "client.id": "weir-console"}
	for k, v := range props {
		p[k] = v
	}
	admin, err := client.NewAdmin(with(p, "default.api.timeout.ms", "10000"))
	if err != nil {
		return nil, nil, err
	}
	k := &kafkaCluster{props: p, admin: admin, timeout: 10 * time.Second}
	return k, k.close, nil
}

func with(p map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(p)+len(kv)/2)
	for k, v := range p {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func (k *kafkaCluster) close() {
	k.mu.Lock()
	p := k.producer
	k.closed = true
	k.mu.Unlock()
	if p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p.Close(ctx)
		cancel()
	}
	k.admin.Close()
}

func (k *kafkaCluster) Describe(ctx context.Context) (ClusterInfo, error) {
	d, err := k.admin.DescribeCluster(ctx)
	if err != nil {
		return ClusterInfo{}, err
	}
	out := ClusterInfo{ID: d.ClusterID, Controller: d.Controller}
	for _, b := range d.Brokers {
		br := Broker{ID: b.NodeID, Host: b.Host, Port: b.Port, Fenced: b.Fenced}
		if b.Rack != nil {
			br.Rack = *b.Rack
		}
		out.Brokers = append(out.Brokers, br)
	}
	return out, nil
}

// metadataTopic is the metadata log's name in DescribeQuorum.
const metadataTopic = "__cluster_metadata"

func (k *kafkaCluster) Quorum(ctx context.Context) (Quorum, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumRequestTopicPartition()
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	raw, err := k.admin.Request(ctx, client.AnyBroker, req)
	if errors.Is(err, client.ErrUnsupportedRequest) {
		return Quorum{}, ErrNotServed
	}
	if err != nil {
		return Quorum{}, err
	}
	resp := raw.(*kmsg.DescribeQuorumResponse)
	if err := codeErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return Quorum{}, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
				return Quorum{}, err
			}
			q := Quorum{Leader: p.LeaderID, Epoch: p.LeaderEpoch, HighWatermark: p.HighWatermark}
			conv := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []QuorumReplica {
				var out []QuorumReplica
				for _, r := range rs {
					qr := QuorumReplica{ID: r.ReplicaID, LogEnd: r.LogEndOffset}
					if r.LastCaughtUpTimestamp > 0 {
						qr.LastCaughtUp = time.UnixMilli(r.LastCaughtUpTimestamp)
					}
					out = append(out, qr)
				}
				return out
			}
			q.Voters, q.Observers = conv(p.CurrentVoters), conv(p.Observers)
			return q, nil
		}
	}
	return Quorum{}, errors.New("console: DescribeQuorum answered without the metadata partition")
}

func codeErr(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

func (k *kafkaCluster) Topics(ctx context.Context, names ...string) ([]Topic, error) {
	ds, err := k.admin.DescribeTopics(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make([]Topic, 0, len(ds))
	for _, d := range ds {
		t := Topic{Name: d.Name, ID: d.ID, Internal: d.Internal, Err: d.Err}
		for _, p := range d.Partitions {
			t.Partitions = append(t.Partitions, Partition{ID: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, Offline: p.Offline, Err: p.Err})
		}
		out = append(out, t)
	}
	return out, nil
}

func (k *kafkaCluster) Offsets(ctx context.Context, topic string, spec int64) (map[int32]int64, error) {
	lo, err := k.admin.ListOffsets(ctx, topic, spec)
	if err != nil && len(lo) == 0 {
		return nil, err
	}
	out := make(map[int32]int64, len(lo))
	for p, o := range lo {
		if o.Err == nil {
			out[p] = o.Offset
		}
	}
	return out, nil
}

func (k *kafkaCluster) LogDirs(ctx context.Context, broker int32, parts []TP) (map[TP]int64, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Topics = nil // every partition, unless some are named
	for topic, ps := range tpsByTopic(parts) {
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, ps
		req.Topics = append(req.Topics, rt)
	}
	raw, err := k.admin.Request(ctx, broker, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.DescribeLogDirsResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[TP]int64{}
	for _, d := range resp.Dirs {
		if kerr.ErrorForCode(d.ErrorCode) != nil {
			continue
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				if !p.IsFuture {
					out[TP{t.Topic, p.Partition}] += p.Size
				}
			}
		}
	}
	return out, nil
}

func (k *kafkaCluster) Configs(ctx context.Context, topic string) ([]TopicConfig, error) {
	cs, err := k.admin.DescribeConfigs(ctx, client.TopicResource, topic)
	if err != nil {
		return nil, err
	}
	out := make([]TopicConfig, 0, len(cs))
	for _, c := range cs {
		out = append(out, TopicConfig{Name: c.Name, Value: c.Value, Source: kmsg.ConfigSource(c.Source).String(), ReadOnly: c.ReadOnly, Sensitive: c.Sensitive})
	}
	return out, nil
}

func (k *kafkaCluster) Groups(ctx context.Context) ([]GroupListing, error) {
	gs, err := k.admin.ListGroups(ctx)
	if err != nil && len(gs) == 0 {
		return nil, err
	}
	out := make([]GroupListing, 0, len(gs))
	for _, g := range gs {
		typ := g.Type
		if typ == "" {
			typ = GroupClassic
		}
		out = append(out, GroupListing{ID: g.Group, Type: typ, ProtocolType: g.ProtocolType, State: g.State, Coordinator: g.Coordinator})
	}
	return out, nil
}

func (k *kafkaCluster) DescribeGroup(ctx context.Context, g GroupListing) (GroupDetail, error) {
	switch g.Type {
	case GroupConsumer:
		return k.describeConsumerGroup(ctx, g)
	case GroupShare:
		return k.describeShareGroup(ctx, g)
	}
	ds, err := k.admin.DescribeGroups(ctx, g.ID)
	if err != nil {
		return GroupDetail{}, err
	}
	if len(ds) != 1 {
		return GroupDetail{}, fmt.Errorf("console: DescribeGroups answered %d groups for one", len(ds))
	}
	d := ds[0]
	if d.Err != nil {
		return GroupDetail{}, d.Err
	}
	out := GroupDetail{GroupListing: g, Protocol: d.Protocol}
	out.State, out.ProtocolType = d.State, d.ProtocolType
	for _, m := range d.Members {
		mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost}
		if m.InstanceID != nil {
			mm.InstanceID = *m.InstanceID
		}
		for _, tp := range m.Assignment {
			mm.Assigned = append(mm.Assigned, TP{tp.Topic, tp.Partition})
		}
		out.Members = append(out.Members, mm)
	}
	return out, nil
}

// toCoordinator sends req to group's coordinator.
func (k *kafkaCluster) toCoordinator(ctx context.Context, group string, req kmsg.Request) (kmsg.Response, error) {
	coord, err := k.admin.Coordinator(ctx, group, client.GroupCoordinator)
	if err != nil {
		return nil, err
	}
	return k.admin.Request(ctx, coord, req)
}

func (k *kafkaCluster) describeConsumerGroup(ctx context.Context, g GroupListing) (GroupDetail, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{g.ID}
	raw, err := k.toCoordinator(ctx, g.ID, req)
	if err != nil {
		return GroupDetail{}, err
	}
	for _, d := range raw.(*kmsg.ConsumerGroupDescribeResponse).Groups {
		if err := codeErr(d.ErrorCode, d.ErrorMessage); err != nil {
			return GroupDetail{}, err
		}
		out := GroupDetail{GroupListing: g, Epoch: d.Epoch, Assignor: d.AssignorName}
		out.State = d.State
		for _, m := range d.Members {
			mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: m.MemberEpoch,
				Assigned: assignmentTPs(m.Assignment.TopicPartitions), Target: assignmentTPs(m.TargetAssignment.TopicPartitions)}
			if m.InstanceID != nil {
				mm.InstanceID = *m.InstanceID
			}
			out.Members = append(out.Members, mm)
		}
		return out, nil
	}
	return GroupDetail{}, errors.New("console: ConsumerGroupDescribe answered no group")
}

func assignmentTPs(ts []kmsg.AssignmentTopicPartition) []TP {
	var out []TP
	for _, t := range ts {
		for _, p := range t.Partitions {
			out = append(out, TP{t.Topic, p})
		}
	}
	sortTPs(out)
	return out
}

func (k *kafkaCluster) describeShareGroup(ctx context.Context, g GroupListing) (GroupDetail, error) {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{g.ID}
	raw, err := k.toCoordinator(ctx, g.ID, req)
	if err != nil {
		return GroupDetail{}, err
	}
	for _, d := range raw.(*kmsg.ShareGroupDescribeResponse).Groups {
		if err := codeErr(d.ErrorCode, d.ErrorMessage); err != nil {
			return GroupDetail{}, err
		}
		out := GroupDetail{GroupListing: g, Epoch: d.GroupEpoch, Assignor: d.Assignor}
		out.State = d.GroupState
		for _, m := range d.Members {
			mm := Member{ID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Epoch: m.MemberEpoch}
			for _, t := range m.Assignment.TopicPartitions {
				for _, p := range t.Partitions {
					mm.Assigned = append(mm.Assigned, TP{t.Topic, p})
				}
			}
			sortTPs(mm.Assigned)
			out.Members = append(out.Members, mm)
		}
		return out, nil
	}
	return GroupDetail{}, errors.New("console: ShareGroupDescribe answered no group")
}

// topicNames maps topic ids to names (OffsetFetch v10 answers with ids).
func (k *kafkaCluster) topicNames(ctx context.Context) (map[[16]byte]string, map[string][16]byte, error) {
	ts, err := k.admin.DescribeTopics(ctx)
	if err != nil {
		return nil, nil, err
	}
	byID, byName := map[[16]byte]string{}, map[string][16]byte{}
	for _, t := range ts {
		byID[t.ID], byName[t.Name] = t.Name, t.ID
	}
	return byID, byName, nil
}

func (k *kafkaCluster) Committed(ctx context.Context, group string) (map[TP]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group // v0-7
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group // v8+; no topics: every committed offset
	req.Groups = append(req.Groups, rg)
	raw, err := k.toCoordinator(ctx, group, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.OffsetFetchResponse)
	out := map[TP]int64{}
	var byID map[[16]byte]string
	add := func(topic string, id [16]byte, p int32, off int64, code int16) {
		if code != 0 || off < 0 {
			return
		}
		if topic == "" && id != ([16]byte{}) {
			if byID == nil {
				if byID, _, err = k.topicNames(ctx); err != nil {
					byID = map[[16]byte]string{}
				}
			}
			topic = byID[id]
		}
		if topic != "" {
			out[TP{topic, p}] = off
		}
	}
	if len(resp.Groups) > 0 {
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return nil, err
			}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					add(t.Topic, t.TopicID, p.Partition, p.Offset, p.ErrorCode)
				}
			}
		}
		return out, nil
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			add(t.Topic, [16]byte{}, p.Partition, p.Offset, p.ErrorCode)
		}
	}
	return out, nil
}

func (k *kafkaCluster) ShareOffsets(ctx context.Context, group string) (map[TP]ShareOffset, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group // no topics: every share partition
	req.Groups = append(req.Groups, rg)
	raw, err := k.toCoordinator(ctx, group, req)
	if err != nil {
		return nil, err
	}
	out := map[TP]ShareOffset{}
	for _, g := range raw.(*kmsg.DescribeShareGroupOffsetsResponse).Groups {
		if err := codeErr(g.ErrorCode, g.ErrorMessage); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				so := ShareOffset{StartOffset: p.StartOffset, Lag: p.Lag, Err: codeErr(p.ErrorCode, p.ErrorMessage)}
				if raw.GetVersion() < 1 {
					so.Lag = -1
				}
				out[TP{t.Topic, p.Partition}] = so
			}
		}
	}
	return out, nil
}

func (k *kafkaCluster) Records(ctx context.Context, q RecordQuery) ([]Record, error) {
	ends, err := k.Offsets(ctx, q.Topic, OffsetLatest)
	if err != nil {
		return nil, err
	}
	end, ok := ends[q.Partition]
	if !ok {
		return nil, fmt.Errorf("console: %s has no partition %d (or its leader is not available)", q.Topic, q.Partition)
	}
	if q.Offset >= end {
		return nil, nil
	}
	c, err := client.NewConsumer(with(k.props, "enable.auto.commit", "false", "auto.offset.reset", "earliest",
		"max.poll.records", strconv.Itoa(q.Limit), "allow.auto.create.topics", "false", "fetch.max.wait.ms", "200"))
	if err != nil {
		return nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c.Close(cctx)
		cancel()
	}()
	tp := client.TopicPartition{Topic: q.Topic, Partition: q.Partition}
	if err := c.Assign([]client.TopicPartition{tp}); err != nil {
		return nil, err
	}
	// Position first: a Seek straight after Assign leaves the client
	// without the partition's metadata, and its fetches never start.
	if _, err := c.Position(ctx, tp); err != nil {
		return nil, err
	}
	if err := c.Seek(tp, q.Offset); err != nil {
		return nil, err
	}
	var out []Record
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for len(out) < q.Limit && ctx.Err() == nil {
		recs, err := c.Poll(ctx)
		if err != nil {
			return out, err
		}
		for _, r := range recs {
			if len(out) == q.Limit {
				break
			}
			rec := Record{Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				rec.Headers = append(rec.Headers, Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, rec)
		}
		if len(out) > 0 && out[len(out)-1].Offset >= end-1 {
			break
		}
	}
	return out, nil
}

func (k *kafkaCluster) Produce(ctx context.Context, r ProduceRecord) (int32, int64, error) {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return 0, 0, client.ErrProducerClosed
	}
	if k.producer == nil {
		p, err := client.NewProducer(with(k.props, "acks", "all", "linger.ms", "0", "allow.auto.create.topics", "false",
			"request.timeout.ms", "10000", "delivery.timeout.ms", "15000", "max.block.ms", "10000"))
		if err != nil {
			k.mu.Unlock()
			return 0, 0, err
		}
		k.producer = p
	}
	p := k.producer
	k.mu.Unlock()
	rec := &client.Record{Topic: r.Topic, Key: r.Key, Value: r.Value}
	if r.Partition >= 0 {
		rec.Partition = client.PartitionOf(r.Partition)
	}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, client.Header{Key: h.Key, Value: h.Value})
	}
	md, err := p.SendSync(ctx, rec)
	if err != nil {
		return 0, 0, err
	}
	return md.Partition, md.Offset, nil
}

func (k *kafkaCluster) CreateTopic(ctx context.Context, s TopicSpec) error {
	return k.admin.CreateTopics(ctx, client.TopicSpec{Name: s.Name, Partitions: s.Partitions, ReplicationFactor: s.ReplicationFactor, Configs: s.Configs})
}

func (k *kafkaCluster) DeleteTopic(ctx context.Context, name string) error {
	return k.admin.DeleteTopics(ctx, name)
}

func (k *kafkaCluster) AlterConfig(ctx context.Context, topic, name string, value *string) error {
	op := client.AlterConfigOp{Name: name, Value: value}
	if value == nil {
		op.Op = 1
	}
	return k.admin.AlterConfigs(ctx, client.TopicResource, topic, op)
}

func (k *kafkaCluster) CommitOffsets(ctx context.Context, group string, offsets map[TP]int64) error {
	_, ids, err := k.topicNames(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, -1, ""
	for topic, parts := range byTopic(offsets) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, ids[topic]
		for _, p := range parts {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, offsets[TP{topic, p}], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	raw, err := k.toCoordinator(ctx, group, req)
	if err != nil {
		return err
	}
	byID := map[[16]byte]string{}
	for n, id := range ids {
		byID[id] = n
	}
	var errs []error
	for _, t := range raw.(*kmsg.OffsetCommitResponse).Topics {
		name := t.Topic
		if name == "" {
			name = byID[t.TopicID]
		}
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", name, p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (k *kafkaCluster) AlterShareOffsets(ctx context.Context, group string, offsets map[TP]int64) error {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for topic, parts := range byTopic(offsets) {
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, offsets[TP{topic, p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	raw, err := k.toCoordinator(ctx, group, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.AlterShareGroupOffsetsResponse)
	if err := codeErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return err
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
				errs = append(errs, fmt.Errorf("%s-%d: %w", t.Topic, p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

func byTopic(offsets map[TP]int64) map[string][]int32 {
	out := map[string][]int32{}
	for tp := range offsets {
		out[tp.Topic] = append(out[tp.Topic], tp.Partition)
	}
	for _, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	}
	return out
}

func tpsByTopic(tps []TP) map[string][]int32 {
	m := make(map[TP]int64, len(tps))
	for _, tp := range tps {
		m[tp] = 0
	}
	return byTopic(m)
}

func (k *kafkaCluster) ElectPreferred(ctx context.Context, parts []TP) (map[TP]error, error) {
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = 0 // preferred
	req.TimeoutMillis = int32(k.timeout / time.Millisecond)
	if len(parts) > 0 {
		for topic, ps := range tpsByTopic(parts) {
			rt := kmsg.NewElectLeadersRequestTopic()
			rt.Topic, rt.Partitions = topic, ps
			req.Topics = append(req.Topics, rt)
		}
	} else {
		req.Topics = nil // every partition
	}
	raw, err := k.admin.Request(ctx, client.ControllerBroker, req)
	if errors.Is(err, client.ErrUnsupportedRequest) {
		return nil, ErrNotServed
	}
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.ElectLeadersResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[TP]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[TP{t.Topic, p.Partition}] = codeErr(p.ErrorCode, p.ErrorMessage)
		}
	}
	return out, nil
}

func (k *kafkaCluster) Reassign(ctx context.Context, moves map[TP][]int32) (map[TP]error, error) {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(k.timeout / time.Millisecond)
	byT := map[string][]int32{}
	for tp := range moves {
		byT[tp.Topic] = append(byT[tp.Topic], tp.Partition)
	}
	for topic, ps := range byT {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
			rp.Partition, rp.Replicas = p, moves[TP{topic, p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	raw, err := k.admin.Request(ctx, client.ControllerBroker, req)
	if errors.Is(err, client.ErrUnsupportedRequest) {
		return nil, ErrNotServed
	}
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.AlterPartitionAssignmentsResponse)
	if err := codeErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	out := map[TP]error{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[TP{t.Topic, p.Partition}] = codeErr(p.ErrorCode, p.ErrorMessage)
		}
	}
	return out, nil
}

func (k *kafkaCluster) Reassignments(ctx context.Context) ([]Reassignment, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = int32(k.timeout / time.Millisecond)
	req.Topics = nil // all
	raw, err := k.admin.Request(ctx, client.ControllerBroker, req)
	if errors.Is(err, client.ErrUnsupportedRequest) {
		return nil, ErrNotServed
	}
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.ListPartitionReassignmentsResponse)
	if err := codeErr(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	var out []Reassignment
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out = append(out, Reassignment{TP: TP{t.Topic, p.Partition}, Replicas: p.Replicas, Adding: p.AddingReplicas, Removing: p.RemovingReplicas})
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessTP(out[i].TP, out[j].TP) })
	return out, nil
}

func lessTP(a, b TP) bool {
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Partition < b.Partition
}

func sortTPs(tps []TP) { sort.Slice(tps, func(i, j int) bool { return lessTP(tps[i], tps[j]) }) }
