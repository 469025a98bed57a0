package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkAssignment checks an explicit replica assignment as Kafka's
// TopicCommand does before sending it: every partition has replicas, no
// broker twice in one partition, every partition the same count, and the
// counts agree with Partitions and ReplicationFactor unless those are -1.
func (s TopicSpec) checkAssignment() error {
	rf := len(s.Assignment[0])
	for p, replicas := range s.Assignment {
		if len(replicas) == 0 {
			return fmt.Errorf("client: topic %s: partition %d has no replicas", s.Name, p)
		}
		if len(replicas) != rf {
			return fmt.Errorf("client: topic %s: partition %d has %d replicas, partition 0 has %d", s.Name, p, len(replicas), rf)
		}
		for i, b := range replicas {
			if slices.Contains(replicas[:i], b) {
				return fmt.Errorf("client: topic %s: partition %d lists broker %d twice", s.Name, p, b)
			}
		}
	}
	if s.Partitions > 0 && int(s.Partitions) != len(s.Assignment) {
		return fmt.Errorf("client: topic %s: %d partitions but an assignment of %d", s.Name, s.Partitions, len(s.Assignment))
	}
	if s.ReplicationFactor > 0 && int(s.ReplicationFactor) != rf {
		return fmt.Errorf("client: topic %s: replication factor %d but an assignment of %d replicas", s.Name, s.ReplicationFactor, rf)
	}
	return nil
}

// ParseReplicaAssignment reads kafka-topics.sh's --replica-assignment:
// partitions separated by commas, each a list of broker ids separated by
// colons, the preferred leader first ("1:2,2:3,3:1" is three partitions
// of two replicas). The result passes TopicSpec's checks.
func ParseReplicaAssignment(s string) ([][]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("client: empty replica assignment")
	}
	var out [][]int32
	for p, part := range strings.Split(s, ",") {
		var replicas []int32
		for _, f := range strings.Split(part, ":") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("client: replica assignment: partition %d: %q is not a broker id", p, f)
			}
			replicas = append(replicas, int32(id))
		}
		out = append(out, replicas)
	}
	if err := (TopicSpec{Name: "assignment", Assignment: out}).checkAssignment(); err != nil {
		return nil, err
	}
	return out, nil
}

// ElectionType says which leader an ElectLeaders asks for.
type ElectionType int8

// Election types, numbered as on the wire.
const (
	ElectPreferred ElectionType = 0 // the first replica of the assignment, if in sync
	ElectUnclean   ElectionType = 1 // any live replica, even out of sync
)

// ElectLeaders asks the controller to elect leaders for partitions of
// topic (all of them when none are named). A partition whose leader is
// already the one asked for is not an error
// (ELECTION_NOT_NEEDED); every other failure is returned, one TopicError
// per partition, joined.
func (a *Admin) ElectLeaders(ctx context.Context, typ ElectionType, topic string, partitions ...int32) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	if len(partitions) == 0 {
		descs, err := a.describe(ctx, []string{topic})
		if err != nil {
			return err
		}
		for _, d := range descs {
			for _, p := range d.Partitions {
				partitions = append(partitions, p.Partition)
			}
		}
	}
	req := kmsg.NewPtrElectLeadersRequest()
	req.ElectionType = int8(typ)
	req.TimeoutMillis = int32(a.timeout.Milliseconds())
	t := kmsg.NewElectLeadersRequestTopic()
	t.Topic, t.Partitions = topic, partitions
	req.Topics = append(req.Topics, t)
	raw, err := a.controllerDo(ctx, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.ElectLeadersResponse)
	if err := resultErr(topic, resp.ErrorCode, nil); err != nil {
		return err
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 84 { // ELECTION_NOT_NEEDED
				continue
			}
			errs = append(errs, resultErr(fmt.Sprintf("%s-%d", t.Topic, p.Partition), p.ErrorCode, p.ErrorMessage))
		}
	}
	return errors.Join(errs...)
}

// AlterPartitionReassignments moves the replicas of topic's partitions:
// replicas[p] is partition p's new replica list, the preferred leader
// first. A reassignment that only reorders the replicas completes at
// once; one that adds replicas completes when they have caught up. The
// leader moves to the new preferred replica only through an election
// (ElectLeaders with ElectPreferred) or the controller's own balancing.
func (a *Admin) AlterPartitionReassignments(ctx context.Context, topic string, replicas map[int32][]int32) error {
	ctx, cancel := a.bound(ctx)
	defer cancel()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.TimeoutMillis = int32(a.timeout.Milliseconds())
	t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	t.Topic = topic
	ps := make([]int32, 0, len(replicas))
	for p := range replicas {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, replicas[p]
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	raw, err := a.controllerDo(ctx, req)
	if err != nil {
		return err
	}
	resp := raw.(*kmsg.AlterPartitionAssignmentsResponse)
	if err := resultErr(topic, resp.ErrorCode, resp.ErrorMessage); err != nil {
		return err
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			errs = append(errs, resultErr(fmt.Sprintf("%s-%d", t.Topic, p.Partition), p.ErrorCode, p.ErrorMessage))
		}
	}
	return errors.Join(errs...)
}
