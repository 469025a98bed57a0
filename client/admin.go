package client

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var adminProps = map[string]prop{
	"default.api.timeout.ms": intProp("60000", 0),
}

// Admin manages topics, configs and groups. Every call is synchronous and
// bounded by ctx and default.api.timeout.ms. Safe for concurrent use.
type Admin struct {
	cl      *core
	timeout time.Duration
}

// NewAdmin validates props and returns an Admin; it connects lazily.
func NewAdmin(props map[string]string, opts ...Option) (*Admin, error) {
	o := buildOptions(opts)
	p, err := parseProps(props, adminProps)
	if err != nil {
		return nil, err
	}
	return &Admin{cl: newCore(p.common(), o, false), timeout: p.ms("default.api.timeout.ms")}, nil
}

// Close closes the admin's connections.
func (a *Admin) Close() { a.cl.close() }

func (a *Admin) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// controllerDo sends req to the controller named by metadata (any broker
// forwards in KRaft), falling back to any broker. A controller that
// refuses connections (killed, its successor not yet in metadata) is not
// waited for: any live broker forwards to whichever controller is
// active.
func (a *Admin) controllerDo(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if a.cl.meta.Load().controller < 0 {
		_ = a.cl.refresh(ctx)
	}
	if c := a.cl.meta.Load().controller; c >= 0 {
		attempt, cancel := context.WithTimeout(ctx, a.cl.cfg.requestTimeout)
		resp, err := a.cl.doFast(attempt, c, req)
		cancel()
		if err == nil {
			return resp, nil
		}
		a.cl.requestRefresh()
	}
	resp, _, err := a.cl.doAny(ctx, req)
	return resp, err
}

// TopicSpec describes a topic to create. Partitions or ReplicationFactor
// -1 take the broker's defaults. Assignment, when set, places the
// replicas explicitly (Assignment[p] lists partition p's replicas, the
// preferred leader first, as kafka-topics.sh --replica-assignment does);
// Partitions and ReplicationFactor are then sent as -1, as Kafka
// requires, and must be -1 or agree with it.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
	Assignment        [][]int32
}

// TopicError is a per-topic (or per-resource) failure of an admin call.
type TopicError struct {
	Name    string
	Err     error
	Message string
}

func (e *TopicError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s: %v: %s", e.Name, e.Err, e.Message)
	}
	return fmt.Sprintf("%s: %v", e.Name, e.Err)
}

func (e *TopicError) Unwrap() error { return e.Err }

func resultErr(name string, code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err == nil {
		return nil
	}
	te := &TopicError{Name: name, Err: err}
	if msg != nil {
		te.Message = *msg
	}
	return te
}

// CreateTopics creates topics. The error joins one TopicError per topic that
// failed (errors.Is(err, kerr.TopicAlreadyExists) works).
func (a *Admin) CreateTopics(ctx context.Context, specs ...TopicSpec) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(a.timeout / time.Millisecond)
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = s.Name, s.Partitions, s.ReplicationFactor
		if len(s.Assignment) > 0 {
			if err := s.checkAssignment(); err != nil {
				return err
			}
			t.NumPartitions, t.ReplicationFactor = -1, -1
			for p, replicas := range s.Assignment {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(p), replicas
				t.ReplicaAssignment = append(t.ReplicaAssignment, a)
			}
		}
		for k, v := range s.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	raw, err := a.controllerDo(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range raw.(*kmsg.CreateTopicsResponse).Topics {
		errs = append(errs, resultErr(t.Topic, t.ErrorCode, t.ErrorMessage))
	}
	return errors.Join(errs...)
}

// DeleteTopics deletes topics by name.
func (a *Admin) DeleteTopics(ctx context.Context, names ...string) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = int32(a.timeout / time.Millisecond)
	req.TopicNames = names
	for _, n := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	raw, err := a.controllerDo(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range raw.(*kmsg.DeleteTopicsResponse).Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		errs = append(errs, resultErr(name, t.ErrorCode, t.ErrorMessage))
	}
	return errors.Join(errs...)
}

// PartitionDescription is one partition of a described topic.
type PartitionDescription struct {
	Partition   int32
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Offline     []int32
	Err         error
}

// TopicDescription describes a topic.
type TopicDescription struct {
	Name       string
	ID         [16]byte
	Internal   bool
	Partitions []PartitionDescription
	Err        error
}

// ListTopics returns every topic name (internal topics included), sorted.
func (a *Admin) ListTopics(ctx context.Context) ([]string, error) {
	descs, err := a.describe(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(descs))
	for _, d := range descs {
		out = append(out, d.Name)
	}
	return out, nil
}

// DescribeTopics describes the named topics (all topics when none given).
// A topic that does not exist has Err set.
func (a *Admin) DescribeTopics(ctx context.Context, names ...string) ([]TopicDescription, error) {
	if len(names) == 0 {
		return a.describe(ctx, nil)
	}
	return a.describe(ctx, names)
}

func (a *Admin) describe(ctx context.Context, names []string) ([]TopicDescription, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	if names != nil {
		for _, n := range names {
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, t)
		}
	}
	raw, _, err := a.cl.doAny(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := raw.(*kmsg.MetadataResponse)
	a.cl.publish(a.cl.meta.Load().merged(resp, names == nil, a.cl.now()))
	var out []TopicDescription
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		d := TopicDescription{Name: *t.Topic, ID: t.TopicID, Internal: t.IsInternal, Err: kerr.ErrorForCode(t.ErrorCode)}
		for _, p := range t.Partitions {
			d.Partitions = append(d.Partitions, PartitionDescription{
				Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, Offline: p.OfflineReplicas, Err: kerr.ErrorForCode(p.ErrorCode),
			})
		}
		sort.Slice(d.Partitions, func(i, j int) bool { return d.Partitions[i].Partition < d.Partitions[j].Partition })
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CreatePartitions raises topic's partition count to total.
func (a *Admin) CreatePartitions(ctx context.Context, topic string, total int32) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = int32(a.timeout / time.Millisecond)
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = topic, total
	req.Topics = append(req.Topics, t)
	raw, err := a.controllerDo(ctx, req)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range raw.(*kmsg.CreatePartitionsResponse).Topics {
		errs = append(errs, resultErr(r.Topic, r.ErrorCode, r.ErrorMessage))
	}
	return errors.Join(errs...)
}

// ConfigResourceType says what a config resource is.
type ConfigResourceType int8

// Resource types, numbered as on the wire.
const (
	TopicResource  ConfigResourceType = 2
	BrokerResource ConfigResourceType = 4
)

// ConfigEntry is one described config.
type ConfigEntry struct {
	Name      string
	Value     *string
	ReadOnly  bool
	IsDefault bool
	Sensitive bool
	Source    int8
}

// DescribeConfigs returns the configs of a topic or broker (name is the
// node id for a broker).
func (a *Admin) DescribeConfigs(ctx context.Context, typ ConfigResourceType, name string) ([]ConfigEntry, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(typ), name
	req.Resources = append(req.Resources, r)
	var raw kmsg.Response
	var err error
	if id, ok := brokerResourceID(typ, name); ok {
		// A broker describes its own configs (static ones differ per
		// node), as Kafka's admin client asks.
		if err := a.cl.ensureBroker(ctx, id); err != nil {
			return nil, err
		}
		raw, err = a.cl.do(ctx, id, req)
	} else {
		raw, _, err = a.cl.doAny(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	var out []ConfigEntry
	for _, res := range raw.(*kmsg.DescribeConfigsResponse).Resources {
		if err := resultErr(res.ResourceName, res.ErrorCode, res.ErrorMessage); err != nil {
			return nil, err
		}
		for _, c := range res.Configs {
			out = append(out, ConfigEntry{Name: c.Name, Value: c.Value, ReadOnly: c.ReadOnly, IsDefault: c.IsDefault || c.Source == kmsg.ConfigSourceDefaultConfig, Sensitive: c.IsSensitive, Source: int8(c.Source)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// brokerResourceID is the node a BROKER resource names ("" is the
// cluster-wide default: no node).
func brokerResourceID(typ ConfigResourceType, name string) (int32, bool) {
	if typ != BrokerResource || name == "" {
		return 0, false
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil || id < 0 {
		return 0, false
	}
	return int32(id), true
}

// AlterConfigOp is one incremental config change.
type AlterConfigOp struct {
	Name  string
	Value *string // nil with Delete
	// Op: 0 set, 1 delete, 2 append, 3 subtract (as on the wire).
	Op int8
}

// AlterConfigs changes configs incrementally (IncrementalAlterConfigs). A
// broker resource named by a node id is sent to that node; the cluster
// default (name "") and other resources to the controller.
func (a *Admin) AlterConfigs(ctx context.Context, typ ConfigResourceType, name string, ops ...AlterConfigOp) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceType(typ), name
	for _, op := range ops {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value, c.Op = op.Name, op.Value, kmsg.IncrementalAlterConfigOp(op.Op)
		r.Configs = append(r.Configs, c)
	}
	req.Resources = append(req.Resources, r)
	var raw kmsg.Response
	var err error
	if id, ok := brokerResourceID(typ, name); ok {
		// One broker's configs go to that broker, as Kafka's admin
		// client sends them (the broker checks the name is its own).
		if err := a.cl.ensureBroker(ctx, id); err != nil {
			return err
		}
		raw, err = a.cl.do(ctx, id, req)
	} else {
		raw, err = a.controllerDo(ctx, req)
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, res := range raw.(*kmsg.IncrementalAlterConfigsResponse).Resources {
		errs = append(errs, resultErr(res.ResourceName, res.ErrorCode, res.ErrorMessage))
	}
	return errors.Join(errs...)
}

// GroupListing is one group from ListGroups.
type GroupListing struct {
	Group, ProtocolType, State, Type string
	Coordinator                      int32
}

// ListGroups asks every broker for the groups it coordinates.
func (a *Admin) ListGroups(ctx context.Context) ([]GroupListing, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	if err := a.cl.refresh(ctx); err != nil {
		return nil, err
	}
	var out []GroupListing
	var errs []error
	for id := range a.cl.meta.Load().brokers {
		raw, err := a.cl.do(ctx, id, kmsg.NewPtrListGroupsRequest())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp := raw.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("node %d: %w", id, err))
			continue
		}
		for _, g := range resp.Groups {
			out = append(out, GroupListing{Group: g.Group, ProtocolType: g.ProtocolType, State: g.GroupState, Type: g.GroupType, Coordinator: id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, errors.Join(errs...)
}

// GroupMember is one member of a described group.
type GroupMember struct {
	MemberID, ClientID, ClientHost string
	InstanceID                     *string
	Assignment                     []TopicPartition // decoded for the consumer protocol
}

// GroupDescription describes a classic group.
type GroupDescription struct {
	Group, State, ProtocolType, Protocol string
	Members                              []GroupMember
	Err                                  error
}

// DescribeGroups describes groups, asking each group's coordinator.
func (a *Admin) DescribeGroups(ctx context.Context, groups ...string) ([]GroupDescription, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	var out []GroupDescription
	for _, g := range groups {
		coord, err := a.cl.findCoordinator(ctx, g, 0)
		if err != nil {
			out = append(out, GroupDescription{Group: g, Err: err})
			continue
		}
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{g}
		raw, err := a.cl.do(ctx, coord, req)
		if err != nil {
			return out, err
		}
		for _, d := range raw.(*kmsg.DescribeGroupsResponse).Groups {
			gd := GroupDescription{Group: d.Group, State: d.State, ProtocolType: d.ProtocolType, Protocol: d.Protocol, Err: resultErr(d.Group, d.ErrorCode, d.ErrorMessage)}
			for _, m := range d.Members {
				gm := GroupMember{MemberID: m.MemberID, ClientID: m.ClientID, ClientHost: m.ClientHost, InstanceID: m.InstanceID}
				if d.ProtocolType == "consumer" && len(m.MemberAssignment) > 0 {
					var asg kmsg.ConsumerMemberAssignment
					if asg.ReadFrom(m.MemberAssignment) == nil {
						for _, t := range asg.Topics {
							for _, p := range t.Partitions {
								gm.Assignment = append(gm.Assignment, TopicPartition{t.Topic, p})
							}
						}
					}
				}
				gd.Members = append(gd.Members, gm)
			}
			out = append(out, gd)
		}
	}
	return out, nil
}

// DeleteGroups deletes empty groups.
func (a *Admin) DeleteGroups(ctx context.Context, groups ...string) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	var errs []error
	for _, g := range groups {
		coord, err := a.cl.findCoordinator(ctx, g, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{g}
		raw, err := a.cl.do(ctx, coord, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range raw.(*kmsg.DeleteGroupsResponse).Groups {
			errs = append(errs, resultErr(r.Group, r.ErrorCode, r.ErrorMessage))
		}
	}
	return errors.Join(errs...)
}

// Offset specs for ListOffsets, as on the wire; any value >= 0 is a
// timestamp in milliseconds.
const (
	OffsetLatest   int64 = -1
	OffsetEarliest int64 = -2
	OffsetMaxTime  int64 = -3
)

// ListedOffset is one partition's answer to ListOffsets.
type ListedOffset struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
	Err         error
}

// ListOffsets returns, for every partition of topic, the offset matching
// spec (OffsetLatest, OffsetEarliest, OffsetMaxTime or a timestamp).
func (a *Admin) ListOffsets(ctx context.Context, topic string, spec int64) (map[int32]ListedOffset, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	tm, err := a.cl.waitTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	parts := make([]int32, len(tm.partitions))
	for i := range parts {
		parts[i] = int32(i)
	}
	return listOffsets(ctx, a.cl, topic, parts, spec, 0)
}

// listOffsets sends ListOffsets for partitions of topic to their leaders.
func listOffsets(ctx context.Context, cl *core, topic string, parts []int32, spec int64, isolation int8) (map[int32]ListedOffset, error) {
	m := cl.meta.Load()
	byLeader := map[int32][]int32{}
	out := map[int32]ListedOffset{}
	for _, p := range parts {
		l, _ := m.leader(topic, p)
		if l < 0 {
			out[p] = ListedOffset{Offset: -1, Err: kerr.LeaderNotAvailable}
			continue
		}
		byLeader[l] = append(byLeader[l], p)
	}
	var errs []error
	for leader, ps := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		req.IsolationLevel = isolation
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch, rp.MaxNumOffsets = p, spec, -1, 1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		raw, err := cl.do(ctx, leader, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range raw.(*kmsg.ListOffsetsResponse).Topics {
			for _, p := range t.Partitions {
				lo := ListedOffset{Offset: p.Offset, Timestamp: p.Timestamp, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)}
				if raw.GetVersion() == 0 && len(p.OldStyleOffsets) > 0 {
					lo.Offset = p.OldStyleOffsets[0]
				}
				out[p.Partition] = lo
			}
		}
	}
	return out, errors.Join(errs...)
}

// ClusterDescription is DescribeCluster's answer.
type ClusterDescription struct {
	ClusterID  string
	Controller int32
	Brokers    []BrokerDescription
}

// MetadataQuorumLeader is the node leading the metadata quorum (the
// active controller) and its epoch, by DescribeQuorum on
// __cluster_metadata, which a broker forwards to the controllers. Unlike
// DescribeCluster's controller field, which a KRaft broker fills with
// some live broker, this names the active controller on Apache Kafka as
// on weir.
func (a *Admin) MetadataQuorumLeader(ctx context.Context) (leader, epoch int32, err error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, t)
	raw, _, err := a.cl.doAny(ctx, req)
	if err != nil {
		return -1, -1, err
	}
	resp := raw.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return -1, -1, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, -1, fmt.Errorf("DescribeQuorum: answer without the metadata partition")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return -1, -1, err
	}
	if p.LeaderID < 0 {
		return -1, -1, fmt.Errorf("DescribeQuorum: the metadata quorum has no leader (epoch %d)", p.LeaderEpoch)
	}
	return p.LeaderID, p.LeaderEpoch, nil
}

// BrokerDescription is one broker of the cluster.
type BrokerDescription struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string
	Fenced bool
}

// DescribeCluster describes the cluster, falling back to Metadata on
// brokers without DescribeCluster.
func (a *Admin) DescribeCluster(ctx context.Context) (ClusterDescription, error) {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	raw, _, err := a.cl.doAny(ctx, kmsg.NewPtrDescribeClusterRequest())
	if err != nil {
		return ClusterDescription{}, err
	}
	resp := raw.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return ClusterDescription{}, err
	}
	d := ClusterDescription{ClusterID: resp.ClusterID, Controller: resp.ControllerID}
	for _, b := range resp.Brokers {
		d.Brokers = append(d.Brokers, BrokerDescription{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack, Fenced: b.IsFenced})
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].NodeID < d.Brokers[j].NodeID })
	return d, nil
}
