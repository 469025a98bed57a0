package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const usage = `usage:
  kip951 topic  -bootstrap B -topic T [-partitions N] [-rf R] [-config k=v]...
  kip951 hints  -bootstrap B -enable true|false
  kip951 move   -bootstrap B -topic T
  kip951 ackgap -bootstrap B -topic T -cluster-dir D -weir BIN [-rate R] [-kills N] ...`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "topic":
		err = createTopic(ctx, args)
	case "hints":
		err = setHints(ctx, args)
	case "move":
		err = moveLeaders(ctx, args)
	case "ackgap":
		err = ackGap(ctx, args)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kip951 %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// kvFlags collects repeated key=value flags.
type kvFlags map[string]*string

func (f kvFlags) String() string { return fmt.Sprint(map[string]*string(f)) }

func (f kvFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", s)
	}
	f[k] = &v
	return nil
}

func newAdmin(bootstrap string) (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return nil, nil, err
	}
	return cl, kadm.NewClient(cl), nil
}

// partitionView is one partition as one broker's metadata sees it.
type partitionView struct {
	leader   int32
	replicas []int32
	isr      []int32
}

// brokerViews asks every broker of the cluster for topic's metadata and
// returns, per broker id, its view of each partition.
func brokerViews(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string) (map[int32][]partitionView, error) {
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int32][]partitionView, len(brokers))
	for _, b := range brokers {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := req.RequestWith(rctx, cl.Broker(int(b.NodeID)))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("metadata from broker %d: %w", b.NodeID, err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			return nil, fmt.Errorf("broker %d: topic %s not (yet) known", b.NodeID, topic)
		}
		ps := make([]partitionView, len(resp.Topics[0].Partitions))
		for _, p := range resp.Topics[0].Partitions {
			if int(p.Partition) >= len(ps) || p.Partition < 0 {
				return nil, fmt.Errorf("broker %d: partition %d out of range", b.NodeID, p.Partition)
			}
			ps[p.Partition] = partitionView{leader: p.Leader, replicas: p.Replicas, isr: p.ISR}
		}
		out[b.NodeID] = ps
	}
	return out, nil
}

// oneView returns one broker's view of topic's partitions.
func oneView(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string) ([]partitionView, error) {
	views, err := brokerViews(ctx, cl, adm, topic)
	if err != nil {
		return nil, err
	}
	for _, v := range views {
		return v, nil
	}
	return nil, errors.New("no broker answered")
}

// waitViews polls brokerViews until ok holds for every broker's view or
// ctx ends.
func waitViews(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, ok func([]partitionView) bool) (map[int32][]partitionView, error) {
	var last error
	for {
		views, err := brokerViews(ctx, cl, adm, topic)
		if err == nil {
			all := len(views) > 0
			for _, v := range views {
				all = all && ok(v)
			}
			if all {
				return views, nil
			}
			err = errors.New("not every broker agrees yet")
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func metadataReq(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	return req
}

// leadersOf returns the leader of each partition of the one topic a
// metadata response describes, and the controller.
func leadersOf(r kmsg.Response) ([]int32, int32, error) {
	md, ok := r.(*kmsg.MetadataResponse)
	if !ok || len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		return nil, -1, errors.New("metadata: topic not described")
	}
	ls := make([]int32, len(md.Topics[0].Partitions))
	for _, p := range md.Topics[0].Partitions {
		if p.Partition < 0 || int(p.Partition) >= len(ls) {
			return nil, -1, fmt.Errorf("metadata: partition %d out of range", p.Partition)
		}
		ls[p.Partition] = p.Leader
	}
	return ls, md.ControllerID, nil
}

// fullISR reports whether every partition's ISR holds all its replicas.
func fullISR(r kmsg.Response) bool {
	md, ok := r.(*kmsg.MetadataResponse)
	if !ok || len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		return false
	}
	for _, p := range md.Topics[0].Partitions {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			return false
		}
	}
	return true
}
