package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/share"
	"weir/internal/sharegroup"
	"weir/internal/sharestate"
	"weir/internal/wiretag"
)

// Helpers that drive share groups with raw kmsg requests, the way a share
// consumer does, over a real server.

// shortShareLocks lets tests use lock durations down to Kafka's floor of
// 1s, and heartbeat intervals and session timeouts down to 50ms.
func shortShareLocks(c *Config) {
	c.Share.MinRecordLockDuration = 100 * time.Millisecond
	c.Share.MinHeartbeatInterval = 50 * time.Millisecond
	c.Share.MinSessionTimeout = 100 * time.Millisecond
}

// shareClient is one client connection to the test broker.
func shareClient(t testing.TB, tb *testBroker) *kgo.Client {
	t.Helper()
	return newClient(t, tb.addr, kgo.RetryTimeout(5*time.Second))
}

// request sends req to node 1 (every test broker's id).
func request[R kmsg.Response](t testing.TB, ctx context.Context, c *kgo.Client, req kmsg.Request) R {
	t.Helper()
	return requestTo[R](t, ctx, c, 1, req)
}

// requestTo sends req to one node (of a test cluster).
func requestTo[R kmsg.Response](t testing.TB, ctx context.Context, c *kgo.Client, node int32, req kmsg.Request) R {
	t.Helper()
	resp, err := c.Broker(int(node)).Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(R)
}

// setGroupConfigs sets share group configs with IncrementalAlterConfigs.
func setGroupConfigs(t testing.TB, ctx context.Context, c *kgo.Client, group string, kv ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kv); i += 2 {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = kv[i], kmsg.StringPtr(kv[i+1])
		res.Configs = append(res.Configs, cfg)
	}
	req.Resources = append(req.Resources, res)
	resp := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, c, req)
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("set group configs %v: %v (%v)", kv, err, deref(resp.Resources[0].ErrorMessage))
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// produceN produces n records with values "v<i>" to one partition, in
// batches of batch records, and returns the topic id.
func produceN(t testing.TB, ctx context.Context, c *kgo.Client, topic string, partition int32, from, n, batch int) {
	t.Helper()
	for i := from; i < from+n; i += batch {
		var recs []*kgo.Record
		for j := i; j < min(i+batch, from+n); j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte("v" + strconv.Itoa(j))})
		}
		// Produce then Flush: with manualProducer's linger the records
		// go out together, one batch (ProduceSync with no linger could
		// send the first record before the others were buffered).
		var mu sync.Mutex
		var first error
		for _, r := range recs {
			c.Produce(ctx, r, func(_ *kgo.Record, err error) {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			})
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		err := first
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// manualProducer produces to the partition named in each record; its
// records wait for a Flush (produceN), which sends them in one batch.
func manualProducer(t testing.TB, tb *testBroker) *kgo.Client {
	return newClient(t, tb.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(time.Minute))
}

func topicIDOf(t testing.TB, tb *testBroker, name string) [16]byte {
	t.Helper()
	tp := tb.b.lookupTopic(name)
	if tp == nil {
		t.Fatalf("no topic %s", name)
	}
	return tp.id
}

// shareMember is one share-group member speaking the protocol by hand.
type shareMember struct {
	t       testing.TB
	c       *kgo.Client
	group   string
	id      string
	epoch   int32 // member epoch
	session int32 // next share session epoch
	topic   [16]byte
	parts   []int32
	// coord and leader are the nodes heartbeats and share fetches or
	// acknowledgements go to; 0 is node 1.
	coord, leader int32
}

func nodeOr1(n int32) int32 {
	if n == 0 {
		return 1
	}
	return n
}

func newShareMember(t testing.TB, tb *testBroker, group, id string) *shareMember {
	return &shareMember{t: t, c: shareClient(t, tb), group: group, id: id}
}

// heartbeat sends one ShareGroupHeartbeat and keeps the assignment.
func (m *shareMember) heartbeat(ctx context.Context, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		req.SubscribedTopicNames = topics
	}
	resp := requestTo[*kmsg.ShareGroupHeartbeatResponse](m.t, ctx, m.c, nodeOr1(m.coord), req)
	if resp.ErrorCode != 0 {
		return resp
	}
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		m.parts = nil
		for _, tp := range resp.Assignment.TopicPartitions {
			m.topic = tp.TopicID
			m.parts = append(m.parts, tp.Partitions...)
		}
		slices.Sort(m.parts)
	}
	return resp
}

func (m *shareMember) join(ctx context.Context, topics ...string) {
	m.t.Helper()
	if resp := m.heartbeat(ctx, topics...); resp.ErrorCode != 0 {
		m.t.Fatalf("join %s: %v %s", m.id, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
}

// ack is one acknowledgement batch.
type ack struct {
	first, last int64
	types       []int8
}

// fetchOpts shape a ShareFetch.
type fetchOpts struct {
	maxRecords int32
	mode       int8
	maxWait    time.Duration
	acks       map[int32][]ack
	epoch      *int32 // override the session epoch
	version    int16
	// acksOnly sends what the Java client sends to a broker it takes no
	// records from in record_limit mode: MaxRecords, BatchSize,
	// MaxBytes, MinBytes and MaxWaitMs all 0.
	acksOnly bool
	// deferAcks tags the request with wiretag.ShareFetchDeferAcks, as
	// weir's record_limit consumer does.
	deferAcks bool
}

// fetch sends a ShareFetch for the member's assigned partitions (the
// first request of a session names them) with piggy-backed acks.
func (m *shareMember) fetch(ctx context.Context, o fetchOpts) *kmsg.ShareFetchResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	if o.version != 0 {
		req.Version = o.version
	}
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id)
	req.ShareSessionEpoch = m.session
	if o.epoch != nil {
		req.ShareSessionEpoch = *o.epoch
	}
	req.MaxWaitMillis = int32(o.maxWait / time.Millisecond)
	req.MinBytes, req.MaxBytes = 1, 50<<20
	req.MaxRecords, req.BatchSize = o.maxRecords, o.maxRecords
	if req.MaxRecords == 0 {
		req.MaxRecords, req.BatchSize = 500, 500
	}
	req.ShareAcquireMode = o.mode
	if o.acksOnly {
		req.MaxRecords, req.BatchSize, req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 0, 0, 0, 0, 0
	}
	if o.deferAcks {
		wiretag.SetShareFetchDeferAcks(&req.UnknownTags)
	}
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = m.topic
	for _, p := range m.parts {
		if req.ShareSessionEpoch != 0 && len(o.acks[p]) == 0 {
			continue
		}
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.Partition = p
		for _, a := range o.acks[p] {
			b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		t.Partitions = append(t.Partitions, rp)
	}
	if len(t.Partitions) > 0 {
		req.Topics = append(req.Topics, t)
	}
	resp := requestTo[*kmsg.ShareFetchResponse](m.t, ctx, m.c, nodeOr1(m.leader), req)
	if resp.ErrorCode == 0 && o.epoch == nil {
		m.session = sharegroup.NextSessionEpoch(req.ShareSessionEpoch)
		if req.ShareSessionEpoch == -1 {
			m.session = 0
		}
	}
	return resp
}

// acknowledge sends a ShareAcknowledge.
func (m *shareMember) acknowledge(ctx context.Context, acks map[int32][]ack, renew bool) *kmsg.ShareAcknowledgeResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.id)
	req.ShareSessionEpoch = m.session
	req.IsRenewAck = renew
	t := kmsg.NewShareAcknowledgeRequestTopic()
	t.TopicID = m.topic
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		for p := range acks {
			if !yield(p) {
				return
			}
		}
	}) {
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.Partition = p
		for _, a := range acks[p] {
			b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
			b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
			rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		}
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp := requestTo[*kmsg.ShareAcknowledgeResponse](m.t, ctx, m.c, nodeOr1(m.leader), req)
	if resp.ErrorCode == 0 {
		m.session = sharegroup.NextSessionEpoch(m.session)
		if req.ShareSessionEpoch == -1 {
			m.session = 0
		}
	}
	return resp
}

// delivered is one record a member received: its partition, offset,
// value and delivery count.
type delivered struct {
	partition int32
	offset    int64
	value     string
	count     int16
}

// records decodes a ShareFetch response: the acquired records only, in
// order. It fails the test on partition errors.
func records(t testing.TB, resp *kmsg.ShareFetchResponse) []delivered {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("share fetch: %v %s", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
	var out []delivered
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				t.Fatalf("share fetch partition %d: %v %s", p.Partition, kerr.ErrorForCode(p.ErrorCode), deref(p.ErrorMessage))
			}
			count := func(off int64) (int16, bool) {
				for _, a := range p.AcquiredRecords {
					if off >= a.FirstOffset && off <= a.LastOffset {
						return a.DeliveryCount, true
					}
				}
				return 0, false
			}
			seen := 0
			data := p.Records
			for len(data) > 0 {
				h, err := wlog.ParseBatchHeader(data)
				if err != nil || int(h.Length) > len(data) {
					t.Fatalf("share fetch partition %d: bad records: %v", p.Partition, err)
				}
				if err := wlog.EachRecord(data[:h.Length], func(r *wlog.Record) bool {
					if n, ok := count(r.Offset); ok {
						out = append(out, delivered{p.Partition, r.Offset, string(r.Value), n})
						seen++
					}
					return true
				}); err != nil {
					t.Fatal(err)
				}
				data = data[h.Length:]
			}
			want := 0
			for _, a := range p.AcquiredRecords {
				want += int(a.LastOffset - a.FirstOffset + 1)
			}
			if seen != want {
				t.Fatalf("partition %d: %d acquired records in the batches sent, %d acquired", p.Partition, seen, want)
			}
		}
	}
	return out
}

// ackAll builds acknowledgements of one type for what was delivered.
func ackAll(ds []delivered, typ int8) map[int32][]ack {
	out := map[int32][]ack{}
	for _, d := range ds {
		as := out[d.partition]
		if n := len(as); n > 0 && as[n-1].last+1 == d.offset {
			as[n-1].last = d.offset
		} else {
			as = append(as, ack{d.offset, d.offset, []int8{typ}})
		}
		out[d.partition] = as
	}
	return out
}

func ackErrors(resp *kmsg.ShareFetchResponse) error {
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.AcknowledgeErrorCode != 0 {
				return fmt.Errorf("partition %d: %v %s", p.Partition, kerr.ErrorForCode(p.AcknowledgeErrorCode), deref(p.AcknowledgeErrorMessage))
			}
		}
	}
	return nil
}

// eventually retries fn until it returns nil or timeout passes.
func eventually(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not true after %v: %v", timeout, err)
		}
		<-tick.C
	}
}

// stateLogs are b's replicas of the __share_group_state partitions.
func stateLogs(t *testing.T, b *Broker) []*partition {
	t.Helper()
	tp := b.lookupTopic(sharestate.Topic)
	if tp == nil {
		t.Fatalf("%s does not exist", sharestate.Topic)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return tp.partitions
}

// shareOffset is what DescribeShareGroupOffsets v1 says of a share
// partition: its start offset and lag (-1 when it has no state).
type shareOffset struct{ start, lag int64 }

func describeShareOffset(t testing.TB, tb *testBroker, k share.StateKey) shareOffset {
	t.Helper()
	name, ok := shareGroupHost{tb.b}.TopicName(k.TopicID)
	if !ok {
		t.Fatalf("no topic %x", k.TopicID)
	}
	r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	r.Version = 1
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = k.Group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic, rt.Partitions = name, []int32{k.Partition}
	g.Topics = append(g.Topics, rt)
	r.Groups = append(r.Groups, g)
	resp := tb.b.shares.DescribeOffsets(r)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("DescribeShareGroupOffsets answer: %+v", resp)
	}
	p := resp.Groups[0].Topics[0].Partitions[0]
	return shareOffset{start: p.StartOffset, lag: p.Lag}
}

// acquiredIn is how many records a share partition has acquired now.
func acquiredIn(t testing.TB, tb *testBroker, group, topic string, partition int32) int64 {
	t.Helper()
	for _, sp := range tb.b.ShareStats().Partitions {
		if sp.Group == group && sp.Topic == topic && sp.Partition == partition {
			return int64(sp.Acquired)
		}
	}
	t.Fatalf("no share partition %s %s-%d", group, topic, partition)
	return 0
}
