package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/internal/wire"
)

// Simulated brokers for tests that run the producer (or consumer) in manual
// mode on a fake clock: a simulated broker serves the requests of a
// connection one at a time, taking fixed latency plus size/bandwidth each;
// hooks let a test rewrite responses.

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// simBroker is one simulated node.
type simBroker struct {
	id         int32
	latency    time.Duration
	bytesPerMs float64
	freeAt     time.Time // when the connection's previous request is done
	offsets    map[string][]int64
}

// simCluster answers Metadata and InitProducerId at once and Produce after
// each broker's service time.
type simCluster struct {
	clock   *fakeClock
	topic   string
	id      [16]byte
	brokers []*simBroker
	due     []simResponse
	fmt     *kmsg.RequestFormatter
	// hook may rewrite a produce response (fault injection).
	hook func(b *simBroker, req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse)
	// fetch, if set, answers Fetch requests at once.
	fetch func(node int32, req *kmsg.FetchRequest) *kmsg.FetchResponse
	// metadataCalls counts Metadata requests answered.
	metadataCalls int
	// producerIDs counts producer ids handed out (1000, 1001, ...).
	producerIDs int64
	// leaders maps partition -> node; default partition i on node i.
	leaders []int32
	epochs  []int32
	seq     int
	offsets []int64 // next offset per partition of the one topic
}

type simResponse struct {
	at  time.Time
	seq int
	cb  wire.Callback
	rsp kmsg.Response
}

func newSimCluster(clock *fakeClock, topic string, brokers []*simBroker) *simCluster {
	s := &simCluster{clock: clock, topic: topic, id: [16]byte{1, 2, 3}, brokers: brokers, fmt: kmsg.NewRequestFormatter()}
	for i := range brokers {
		s.leaders = append(s.leaders, brokers[i].id)
		s.epochs = append(s.epochs, 1)
	}
	return s
}

func (s *simCluster) options(seed uint64) []Option {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var mu sync.Mutex
	return []Option{
		WithRand(func() uint32 { mu.Lock(); defer mu.Unlock(); return r.Uint32() }),
		func(o *options) {
			o.manual = true
			o.clock = s.clock
			o.dial = s.dial
		},
	}
}

// dial connects to the simulated broker at addr (sim:9092+id), whatever
// node id the client has in mind: a bootstrap connection is a connection to
// a broker like any other.
func (s *simCluster) dial(_ context.Context, _ int32, addr string, onWrite func(int)) (brokerConn, error) {
	var port int32
	if _, err := fmt.Sscanf(addr, "sim:%d", &port); err != nil {
		return nil, fmt.Errorf("sim: bad address %q", addr)
	}
	return &simConn{s: s, node: port - 9092, onWrite: onWrite, done: make(chan struct{})}, nil
}

func (s *simCluster) broker(id int32) *simBroker {
	for _, b := range s.brokers {
		if b.id == id {
			return b
		}
	}
	return nil
}

// deliver runs the callbacks of responses due by now, in time order.
func (s *simCluster) deliver(now time.Time) {
	sort.Slice(s.due, func(i, j int) bool {
		if !s.due[i].at.Equal(s.due[j].at) {
			return s.due[i].at.Before(s.due[j].at)
		}
		return s.due[i].seq < s.due[j].seq
	})
	n := 0
	for n < len(s.due) && !s.due[n].at.After(now) {
		n++
	}
	ready := append([]simResponse(nil), s.due[:n]...)
	s.due = append(s.due[:0], s.due[n:]...) // no stale callbacks left in the array
	clear(s.due[len(s.due):cap(s.due)])
	for _, r := range ready {
		r.cb(r.rsp, nil)
	}
}

func (s *simCluster) metadata() *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	resp.ControllerID = s.brokers[0].id
	for _, b := range s.brokers {
		mb := kmsg.NewMetadataResponseBroker()
		mb.NodeID, mb.Host, mb.Port = b.id, "sim", 9092+b.id
		resp.Brokers = append(resp.Brokers, mb)
	}
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.TopicID = kmsg.StringPtr(s.topic), s.id
	for p, l := range s.leaders {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.LeaderEpoch = int32(p), l, s.epochs[p]
		mp.Replicas, mp.ISR = []int32{l}, []int32{l}
		t.Partitions = append(t.Partitions, mp)
	}
	resp.Topics = append(resp.Topics, t)
	return resp
}

type simConn struct {
	s       *simCluster
	node    int32
	onWrite func(int)
	done    chan struct{}
}

func (c *simConn) Version(key int16) (int16, bool) {
	switch key {
	case 0:
		return 12, true
	case 3:
		return 12, true
	case 22:
		return 5, true
	}
	return -1, false
}

func (c *simConn) Done() <-chan struct{} { return c.done }
func (c *simConn) Close()                {}

func (c *simConn) Do(_ context.Context, req kmsg.Request, _ time.Duration) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		c.s.metadataCalls++
		return c.s.metadata(), nil
	case *kmsg.InitProducerIDRequest:
		resp := kmsg.NewPtrInitProducerIDResponse()
		resp.ProducerID, resp.ProducerEpoch = 1000+c.s.producerIDs, 0
		c.s.producerIDs++
		return resp, nil
	default:
		return nil, fmt.Errorf("sim: unexpected %T", r)
	}
}

func (c *simConn) Send(req kmsg.Request, _ time.Duration, _ bool, cb wire.Callback) {
	if fr, ok := req.(*kmsg.FetchRequest); ok && c.s.fetch != nil {
		cb(c.s.fetch(c.node, fr), nil)
		return
	}
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok {
		cb(nil, errors.New("sim: only Produce is sent asynchronously"))
		return
	}
	c.onWrite(len(c.s.fmt.AppendRequest(nil, req, 0)))
	b := c.s.broker(c.node)
	now := c.s.clock.Now()
	bytes := 0
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(pr.GetVersion())
	for _, t := range pr.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			bytes += len(p.Records)
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset = -1
			if c.s.leaders[p.Partition] != c.node {
				rp.ErrorCode = 6 // NOT_LEADER_OR_FOLLOWER
			}
			rp.LogAppendTime = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if c.s.hook != nil {
		c.s.hook(b, pr, resp)
	}
	// Offsets are per partition across brokers (a moved leader continues
	// the log), assigned only to what was accepted.
	for ti, t := range pr.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			if rp.ErrorCode != 0 {
				continue
			}
			for int(p.Partition) >= len(c.s.offsets) {
				c.s.offsets = append(c.s.offsets, 0)
			}
			rp.BaseOffset = c.s.offsets[p.Partition]
			c.s.offsets[p.Partition] += int64(recordCount(p.Records))
		}
	}
	start := now
	if b.freeAt.After(start) {
		start = b.freeAt
	}
	service := b.latency
	if b.bytesPerMs > 0 {
		service += time.Duration(float64(bytes) / b.bytesPerMs * float64(time.Millisecond))
	}
	b.freeAt = start.Add(service)
	c.s.seq++
	c.s.due = append(c.s.due, simResponse{at: b.freeAt, seq: c.s.seq, cb: cb, rsp: resp})
}

// recordCount reads the record count of a batch's header.
func recordCount(batch []byte) int {
	if len(batch) < 61 {
		return 0
	}
	return int(int32(uint32(batch[57])<<24 | uint32(batch[58])<<16 | uint32(batch[59])<<8 | uint32(batch[60])))
}
