package client

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestParseReplicaAssignment(t *testing.T) {
	cases := []struct {
		in   string
		want [][]int32
		err  string
	}{
		{in: "1:2,2:3,3:1", want: [][]int32{{1, 2}, {2, 3}, {3, 1}}},
		{in: "0", want: [][]int32{{0}}},
		{in: " 1 : 2 , 3:4", want: [][]int32{{1, 2}, {3, 4}}},
		{in: "", err: "empty"},
		{in: "1:2,3", err: "partition 1 has 1 replicas"},
		{in: "1:1", err: "lists broker 1 twice"},
		{in: "1,,2", err: `partition 1: "" is not a broker id`},
		{in: "1:x", err: `"x" is not a broker id`},
		{in: "-1", err: "not a broker id"},
		{in: "99999999999", err: "not a broker id"},
	}
	for _, tc := range cases {
		got, err := ParseReplicaAssignment(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// Whatever it is given, the parser returns an error or an assignment that
// passes the checks CreateTopics makes, and never panics.
func FuzzParseReplicaAssignment(f *testing.F) {
	for _, s := range []string{"1:2,2:3,3:1", "0", "1:1", "", ",", "1::2", "7:8:9,9:8:7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseReplicaAssignment(s)
		if err != nil {
			return
		}
		if len(a) == 0 {
			t.Fatalf("%q: no partitions and no error", s)
		}
		if err := (TopicSpec{Name: "t", Partitions: -1, ReplicationFactor: -1, Assignment: a}).checkAssignment(); err != nil {
			t.Fatalf("%q parsed to %v, which CreateTopics refuses: %v", s, a, err)
		}
	})
}

func TestCheckAssignmentAgainstCounts(t *testing.T) {
	a := [][]int32{{1, 2}, {2, 1}}
	for _, tc := range []struct {
		parts int32
		rf    int16
		ok    bool
	}{{-1, -1, true}, {2, 2, true}, {3, -1, false}, {-1, 1, false}} {
		err := TopicSpec{Name: "t", Partitions: tc.parts, ReplicationFactor: tc.rf, Assignment: a}.checkAssignment()
		if (err == nil) != tc.ok {
			t.Errorf("partitions %d rf %d: %v, want ok=%v", tc.parts, tc.rf, err, tc.ok)
		}
	}
}

// On the single test broker: an explicit assignment places the replicas
// as given, an assignment naming a broker that does not exist fails, and
// a preferred election and a reassignment that keeps the replica are
// accepted.
func TestIntegrationAdminAssignment(t *testing.T) {
	a := newTestAdmin(t)
	ctx := testCtx(t)
	cl, err := a.DescribeCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Brokers) == 0 {
		t.Fatal("no brokers described")
	}
	id := cl.Brokers[0].NodeID
	topic := uniqueTopic(t)
	if err := a.CreateTopics(ctx, TopicSpec{Name: topic, Partitions: -1, ReplicationFactor: -1, Assignment: [][]int32{{id}, {id}, {id}}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		ds, err := a.DescribeTopics(ctx, topic)
		if err != nil {
			return err
		}
		if len(ds) != 1 || len(ds[0].Partitions) != 3 {
			return fmt.Errorf("described %+v", ds)
		}
		for _, p := range ds[0].Partitions {
			if !reflect.DeepEqual(p.Replicas, []int32{id}) || p.Leader != id {
				return fmt.Errorf("partition %d: replicas %v leader %d", p.Partition, p.Replicas, p.Leader)
			}
		}
		return nil
	})
	if err := a.CreateTopics(ctx, TopicSpec{Name: uniqueTopic(t) + "-bad", Assignment: [][]int32{{id + 100}}}); err == nil {
		t.Fatal("an assignment to a broker that does not exist was accepted")
	}
	if err := a.CreateTopics(ctx, TopicSpec{Name: uniqueTopic(t) + "-dup", Assignment: [][]int32{{id, id}}}); err == nil {
		t.Fatal("an assignment listing a broker twice was sent")
	}
	if err := a.ElectLeaders(ctx, ElectPreferred, topic); err != nil {
		t.Fatalf("preferred election with the leader already preferred: %v", err)
	}
	if err := a.AlterPartitionReassignments(ctx, topic, map[int32][]int32{0: {id}}); err != nil {
		t.Fatalf("reassignment to the same replica: %v", err)
	}
	err = a.ElectLeaders(ctx, ElectPreferred, "no-such-topic-"+topic, 0)
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("election on an unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
