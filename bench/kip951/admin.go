package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// createTopic creates a topic and waits until every broker names a
// leader for each of its partitions.
func createTopic(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("topic", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic to create")
	partitions := fs.Int("partitions", 100, "partitions")
	rf := fs.Int("rf", 3, "replication factor")
	configs := kvFlags{}
	fs.Var(configs, "config", "topic config key=value (repeatable)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bootstrap == "" || *topic == "" || *partitions < 1 || *rf < 1 {
		return errors.New("-bootstrap, -topic, positive -partitions and -rf are required")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cl, adm, err := newAdmin(*bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := adm.CreateTopic(ctx, int32(*partitions), int16(*rf), configs, *topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	_, err = waitViews(ctx, cl, adm, *topic, func(ps []partitionView) bool {
		if len(ps) != *partitions {
			return false
		}
		for _, p := range ps {
			if p.leader < 0 || len(p.isr) != *rf {
				return false
			}
		}
		return true
	})
	return err
}

// setHints sets weir.leader.hints.enable for the whole cluster and waits
// until every broker describes the value.
func setHints(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("hints", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "bootstrap servers")
	enable := fs.Bool("enable", true, "leader hints on or off")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	const key = "weir.leader.hints.enable"
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cl, adm, err := newAdmin(*bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	want := strconv.FormatBool(*enable)
	resps, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &want}})
	if err != nil {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("%s: %w (%s)", key, r.Err, r.ErrMessage)
		}
	}
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return err
	}
	for _, b := range brokers {
		for {
			rcs, err := adm.DescribeBrokerConfigs(ctx, b.NodeID)
			if err == nil {
				var rc kadm.ResourceConfig
				rc, err = rcs.On(strconv.Itoa(int(b.NodeID)), nil)
				if err == nil {
					err = rc.Err
				}
				if err == nil {
					if c, ok := findConfig(rc.Configs, key); ok && c == want {
						break
					}
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("broker %d does not describe %s=%s: %v", b.NodeID, key, want, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	fmt.Fprintf(os.Stderr, "%s=%s on %d brokers\n", key, want, len(brokers))
	return nil
}

func findConfig(cs []kadm.Config, name string) (string, bool) {
	for _, c := range cs {
		if c.Key == name && c.Value != nil {
			return *c.Value, true
		}
	}
	return "", false
}

// moveLeaders reverses every partition's replica list and elects the
// preferred (now first) replica, so every partition's leadership moves
// at once (for RF >= 2 and a leader that was the first replica). It prints
// one line: how many partitions changed leader and how long each stage
// took, from the reassignment request to every broker's metadata naming
// the new leaders.
func moveLeaders(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("move", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic whose leaders move")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cl, adm, err := newAdmin(*bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	before, err := oneView(ctx, cl, adm, *topic)
	if err != nil {
		return err
	}
	target := make([][]int32, len(before))
	req := kadm.AlterPartitionAssignmentsReq{}
	for i, p := range before {
		target[i] = slices.Clone(p.replicas)
		slices.Reverse(target[i])
		req.Assign(*topic, int32(i), target[i])
	}

	t0 := time.Now()
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	if err := resps.Error(); err != nil {
		return fmt.Errorf("reassign: %w", err)
	}
	tReq := time.Now()
	// Same replicas in a new order: the reassignment completes at once;
	// wait until every broker's metadata shows the new order.
	if _, err := waitViews(ctx, cl, adm, *topic, func(ps []partitionView) bool {
		for i, p := range ps {
			if !slices.Equal(p.replicas, target[i]) {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("reassignment not visible: %w", err)
	}
	tReassigned := time.Now()
	set := kadm.TopicsSet{}
	for i := range before {
		set.Add(*topic, int32(i))
	}
	er, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		return fmt.Errorf("elect: %w", err)
	}
	elected, notNeeded, failed := 0, 0, 0
	for _, ps := range er {
		for _, r := range ps {
			switch {
			case r.Err == nil:
				elected++
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				notNeeded++
			default:
				failed++
				fmt.Fprintf(os.Stderr, "elect %s/%d: %v\n", r.Topic, r.Partition, r.Err)
			}
		}
	}
	tElect := time.Now()
	after, err := waitViews(ctx, cl, adm, *topic, func(ps []partitionView) bool {
		for i, p := range ps {
			if p.leader != target[i][0] {
				return false
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("new leaders not visible everywhere: %w", err)
	}
	tDone := time.Now()
	moved := 0
	for _, v := range after {
		for i, p := range v {
			if p.leader != before[i].leader {
				moved++
			}
		}
		break
	}
	fmt.Printf("move partitions=%d moved=%d elected=%d not_needed=%d failed=%d start_unix_ms=%d reassign_req_ms=%.1f reassign_visible_ms=%.1f elect_req_ms=%.1f converge_ms=%.1f total_ms=%.1f\n",
		len(before), moved, elected, notNeeded, failed, t0.UnixMilli(),
		msOf(tReq.Sub(t0)), msOf(tReassigned.Sub(t0)), msOf(tElect.Sub(tReassigned)), msOf(tDone.Sub(tElect)), msOf(tDone.Sub(t0)))
	return nil
}

func msOf(d time.Duration) float64 { return d.Seconds() * 1000 }
