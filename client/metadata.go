package client

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/client/partitioner"
)

// metadata is an immutable snapshot of what the client knows about the
// cluster. Updates build a new snapshot and swap it in atomically, so a
// reader holding one sees a consistent view.
type metadata struct {
	brokers    map[int32]broker
	topics     map[string]*topicMeta
	byID       map[[16]byte]string
	controller int32
	clusterID  string
	updated    time.Time
}

type broker struct {
	id   int32
	host string
	port int32
	rack string
}

func (b broker) addr() string { return net.JoinHostPort(b.host, strconv.Itoa(int(b.port))) }

type topicMeta struct {
	name       string
	id         [16]byte
	err        error // a topic-level error from the last response (nil: fine)
	internal   bool
	partitions []partitionMeta
	view       *partitioner.Topic // leaders per partition, for the partitioners
}

type partitionMeta struct {
	leader   int32
	epoch    int32
	replicas []int32
	isr      []int32
	offline  []int32
	err      error
}

func emptyMetadata() *metadata {
	return &metadata{brokers: map[int32]broker{}, topics: map[string]*topicMeta{}, byID: map[[16]byte]string{}, controller: -1}
}

func (m *metadata) leader(topic string, p int32) (int32, int32) {
	t := m.topics[topic]
	if t == nil || p < 0 || int(p) >= len(t.partitions) {
		return -1, -1
	}
	return t.partitions[p].leader, t.partitions[p].epoch
}

// merged builds the snapshot that follows m after a Metadata response. Topics
// not in the response are kept unless the response covered every topic. A
// partition whose cached leader epoch is newer than the response's keeps the
// cached entry: a lagging broker must not move a leader backwards.
func (m *metadata) merged(resp *kmsg.MetadataResponse, allTopics bool, now time.Time) *metadata {
	n := &metadata{
		brokers:    make(map[int32]broker, len(resp.Brokers)),
		topics:     make(map[string]*topicMeta, len(m.topics)),
		byID:       make(map[[16]byte]string, len(m.byID)),
		controller: resp.ControllerID,
		updated:    now,
	}
	if resp.ClusterID != nil {
		n.clusterID = *resp.ClusterID
	}
	for _, b := range resp.Brokers {
		br := broker{id: b.NodeID, host: b.Host, port: b.Port}
		if b.Rack != nil {
			br.rack = *b.Rack
		}
		n.brokers[b.NodeID] = br
	}
	if !allTopics {
		maps.Copy(n.topics, m.topics)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil {
			continue
		}
		t := &topicMeta{name: *rt.Topic, id: rt.TopicID, internal: rt.IsInternal, err: kerr.ErrorForCode(rt.ErrorCode)}
		old := m.topics[t.name]
		if t.err == nil {
			t.partitions = make([]partitionMeta, 0, len(rt.Partitions))
			for _, rp := range rt.Partitions {
				if int(rp.Partition) != len(t.partitions) {
					// Partitions arrive in order in practice; a gap means a
					// malformed answer, treated as a transient topic error.
					t.err = fmt.Errorf("%w: partition %d listed out of order", errBadMetadata, rp.Partition)
					break
				}
				pm := partitionMeta{leader: rp.Leader, epoch: rp.LeaderEpoch, replicas: rp.Replicas, isr: rp.ISR, offline: rp.OfflineReplicas, err: kerr.ErrorForCode(rp.ErrorCode)}
				if old != nil && int(rp.Partition) < len(old.partitions) && old.partitions[rp.Partition].epoch > pm.epoch && pm.epoch >= 0 {
					pm = old.partitions[rp.Partition]
				}
				t.partitions = append(t.partitions, pm)
			}
		}
		if t.err != nil && old != nil && len(old.partitions) > 0 && kerr.IsRetriable(t.err) {
			// Keep serving the last good layout through a transient error.
			t.partitions, t.id = old.partitions, old.id
		}
		t.view = topicView(t)
		n.topics[t.name] = t
	}
	for name, t := range n.topics {
		if t.id != ([16]byte{}) {
			n.byID[t.id] = name
		}
	}
	return n
}

var errBadMetadata = errors.New("client: inconsistent metadata")

func topicView(t *topicMeta) *partitioner.Topic {
	leaders := make([]int32, len(t.partitions))
	for i, p := range t.partitions {
		leaders[i] = p.leader
	}
	return partitioner.NewTopic(t.name, leaders)
}

// nodeEndpoint is a broker address carried by a KIP-951 response.
type nodeEndpoint struct {
	id   int32
	host string
	port int32
	rack *string
}

// leaderHint is a KIP-951 CurrentLeader for one partition.
type leaderHint struct {
	topic     string
	partition int32
	leader    int32
	epoch     int32
}

// withLeaders returns the snapshot after applying KIP-951 hints, and how
// many were applied. A hint is ignored unless the partition is known, the
// epoch is newer than the cached one and the leader's address is known
// (from the response's endpoints or from the cached brokers): a leader id
// without an endpoint, or an older epoch, must not move anything.
func (m *metadata) withLeaders(hints []leaderHint, eps []nodeEndpoint) (*metadata, int) {
	var n *metadata
	applied := 0
	for _, h := range hints {
		cur := m
		if n != nil {
			cur = n
		}
		t := cur.topics[h.topic]
		if t == nil || h.partition < 0 || int(h.partition) >= len(t.partitions) || h.leader < 0 || h.epoch < 0 {
			continue
		}
		if h.epoch <= t.partitions[h.partition].epoch {
			continue
		}
		_, known := cur.brokers[h.leader]
		var ep *nodeEndpoint
		for i := range eps {
			if eps[i].id == h.leader {
				ep = &eps[i]
			}
		}
		if ep == nil && !known {
			continue
		}
		if n == nil {
			n = &metadata{brokers: maps.Clone(m.brokers), topics: maps.Clone(m.topics), byID: m.byID, controller: m.controller, clusterID: m.clusterID, updated: m.updated}
		}
		if ep != nil {
			b := broker{id: ep.id, host: ep.host, port: ep.port}
			if ep.rack != nil {
				b.rack = *ep.rack
			}
			n.brokers[ep.id] = b
		}
		nt := *t
		nt.partitions = append([]partitionMeta(nil), t.partitions...)
		nt.partitions[h.partition].leader = h.leader
		nt.partitions[h.partition].epoch = h.epoch
		nt.partitions[h.partition].err = nil
		nt.view = topicView(&nt)
		n.topics[h.topic] = &nt
		applied++
	}
	if n == nil {
		return m, 0
	}
	return n, applied
}
