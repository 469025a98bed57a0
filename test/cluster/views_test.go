package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// view is what one broker reports about the cluster: its Metadata answer
// for one topic and its DescribeCluster answer.
type view struct {
	node       int
	controller int32             // DescribeCluster's ControllerID
	brokers    []int32           // DescribeCluster's brokers, sorted
	metaBrkrs  []int32           // Metadata's brokers, sorted
	leaders    map[int32]int32   // partition -> leader
	replicas   map[int32][]int32 // partition -> replicas
}

// viewOf asks node n alone, through a client seeded only with its
// address that sends both requests to that seed.
func (c *testCluster) viewOf(ctx context.Context, n int, topic string) (view, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr(n)), kgo.RequestRetries(0))
	if err != nil {
		return view{}, err
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	v := view{node: n, leaders: map[int32]int32{}, replicas: map[int32][]int32{}}

	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.EndpointType = 1
	dresp, err := dreq.RequestWith(ctx, seed)
	if err != nil {
		return view{}, fmt.Errorf("node %d DescribeCluster: %w", n, err)
	}
	if err := kerr.ErrorForCode(dresp.ErrorCode); err != nil {
		return view{}, fmt.Errorf("node %d DescribeCluster: %w", n, err)
	}
	v.controller = dresp.ControllerID
	for _, b := range dresp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	slices.Sort(v.brokers)

	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mresp, err := mreq.RequestWith(ctx, seed)
	if err != nil {
		return view{}, fmt.Errorf("node %d Metadata: %w", n, err)
	}
	for _, b := range mresp.Brokers {
		v.metaBrkrs = append(v.metaBrkrs, b.NodeID)
	}
	slices.Sort(v.metaBrkrs)
	if len(mresp.Topics) != 1 {
		return view{}, fmt.Errorf("node %d Metadata: %d topics in the answer", n, len(mresp.Topics))
	}
	if err := kerr.ErrorForCode(mresp.Topics[0].ErrorCode); err != nil {
		return view{}, fmt.Errorf("node %d Metadata of %s: %w", n, topic, err)
	}
	for _, p := range mresp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil && p.ErrorCode != kerr.ReplicaNotAvailable.Code {
			return view{}, fmt.Errorf("node %d Metadata of %s/%d: %w", n, topic, p.Partition, err)
		}
		v.leaders[p.Partition] = p.Leader
		v.replicas[p.Partition] = slices.Sorted(slices.Values(p.Replicas))
	}
	return v, nil
}

// agreement asks every node in nodes and returns their views if they
// report the same controller (one of nodes), the same brokers (exactly
// nodes, in DescribeCluster and Metadata), and the same leader for each
// of the topic's partitions, every leader being one of nodes.
func (c *testCluster) agreement(ctx context.Context, nodes []int, topic string, partitions int) ([]view, error) {
	want := make([]int32, len(nodes))
	for i, n := range nodes {
		want[i] = int32(n)
	}
	slices.Sort(want)
	var views []view
	for _, n := range nodes {
		v, err := c.viewOf(ctx, n, topic)
		if err != nil {
			return nil, err
		}
		switch {
		case !slices.Contains(want, v.controller):
			return nil, fmt.Errorf("node %d names controller %d, not one of %v", n, v.controller, want)
		case !slices.Equal(v.brokers, want):
			return nil, fmt.Errorf("node %d DescribeCluster lists brokers %v, want %v", n, v.brokers, want)
		case !slices.Equal(v.metaBrkrs, want):
			return nil, fmt.Errorf("node %d Metadata lists brokers %v, want %v", n, v.metaBrkrs, want)
		case len(v.leaders) != partitions:
			return nil, fmt.Errorf("node %d reports %d partitions of %s, want %d", n, len(v.leaders), topic, partitions)
		}
		for p, l := range v.leaders {
			if !slices.Contains(want, l) {
				return nil, fmt.Errorf("node %d: %s/%d led by %d, not one of %v", n, topic, p, l, want)
			}
		}
		if len(views) > 0 {
			first := views[0]
			if v.controller != first.controller {
				return nil, fmt.Errorf("node %d names controller %d, node %d names %d", n, v.controller, first.node, first.controller)
			}
			if !maps.Equal(v.leaders, first.leaders) {
				return nil, fmt.Errorf("leaders of %s: node %d reports %v, node %d reports %v", topic, n, v.leaders, first.node, first.leaders)
			}
		}
		views = append(views, v)
	}
	return views, nil
}

// admin is a kadm client seeded with the given nodes.
func (c *testCluster) admin(nodes []int) (*kadm.Client, func(), error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.bootstrap(nodes)...), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// createTopic creates a topic through any of nodes; a retry that finds
// the topic created by an earlier try that timed out counts as success
// (a request interrupted by a controller change may still commit).
func (c *testCluster) createTopic(ctx context.Context, nodes []int, topic string, partitions int32, rf int16) error {
	adm, done, err := c.admin(nodes)
	if err != nil {
		return err
	}
	defer done()
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err != nil {
		return err
	}
	if resp.Err != nil && resp.Err != kerr.TopicAlreadyExists {
		return resp.Err
	}
	return nil
}

// onePartitionTopic creates topic with one partition on three replicas
// and waits until every node of all reports the same leader; it returns
// their views.
func (c *testCluster) onePartitionTopic(ctx context.Context, all []int, topic string) []view {
	c.t.Helper()
	eventually(c.t, ctx, 20*time.Second, "create "+topic, func(ctx context.Context) error {
		return c.createTopic(ctx, all, topic, 1, 3)
	})
	var views []view
	eventually(c.t, ctx, 20*time.Second, "every broker reports the same leader", func(ctx context.Context) (err error) {
		views, err = c.agreement(ctx, all, topic, 1)
		return err
	})
	return views
}

// leadersOf counts the partitions each node leads.
func leadersOf(v view) map[int32][]int32 {
	out := map[int32][]int32{}
	for p, l := range v.leaders {
		out[l] = append(out[l], p)
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}
