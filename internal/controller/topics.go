package controller

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

// apiError is a Kafka error code with its message, as a Go error.
type apiError struct {
	err *kerr.Error
	msg string
}

func (e *apiError) Error() string { return e.err.Message + ": " + e.msg }
func (e *apiError) Unwrap() error { return e.err }
func apiErr(err *kerr.Error, format string, args ...any) *apiError {
	return &apiError{err: err, msg: fmt.Sprintf(format, args...)}
}

// codeAndMessage splits an error for a response: its Kafka code (unknown
// server error if it has none) and message.
func codeAndMessage(err error) (int16, *string) {
	if err == nil {
		return 0, nil
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.err.Code, &ae.msg
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		msg := err.Error()
		return ke.Code, &msg
	}
	msg := err.Error()
	return kerr.UnknownServerError.Code, &msg
}

// dropped answers every item of a response with the error that spoiled
// the decision: none of it was written.
func dropped[T any](items []T, err error, set func(item *T, code int16, msg *string)) {
	code, msg := codeAndMessage(err)
	for i := range items {
		set(&items[i], code, msg)
	}
}

// CreateTopics handles CreateTopics (API 19). Each topic gets a random
// id and its partitions' replicas from place, over the active brokers,
// or from the request's manual assignment; a partition's ISR is its
// active replicas and its leader the first of them. Topic configs are
// recorded as given: the caller validates them (internal/config) before
// calling. All created topics are one batch; with ValidateOnly, none is
// written and the answers are what would have happened.
func (c *Controller) CreateTopics(req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, []metadata.Record) {
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.Version = req.Version
	names := map[string]int{}
	for _, rt := range req.Topics {
		names[rt.Topic]++
	}
	t := c.begin()
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = rt.Topic
		var err error
		if names[rt.Topic] > 1 {
			err = apiErr(kerr.InvalidRequest, "Duplicate topic name.")
		} else {
			err = t.createTopic(&rt, &st)
		}
		st.ErrorCode, st.ErrorMessage = codeAndMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	if req.ValidateOnly {
		return resp, nil
	}
	recs, err := t.commit()
	if err != nil {
		dropped(resp.Topics, err, func(st *kmsg.CreateTopicsResponseTopic, code int16, msg *string) {
			st.ErrorCode, st.ErrorMessage = code, msg
		})
		return resp, nil
	}
	if len(recs) > 0 {
		c.log.Info("topics created", "request_topics", len(req.Topics), "records", len(recs))
	}
	return resp, recs
}

func (t *txn) createTopic(rt *kmsg.CreateTopicsRequestTopic, st *kmsg.CreateTopicsResponseTopic) error {
	if err := metadata.ValidTopicName(rt.Topic); err != nil {
		return apiErr(kerr.InvalidTopicException, "%v", err)
	}
	if _, ok := t.b.TopicByName(rt.Topic); ok {
		return apiErr(kerr.TopicAlreadyExists, "Topic '%s' already exists.", rt.Topic)
	}
	if other, ok := t.collision(rt.Topic); ok {
		return apiErr(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", rt.Topic, other)
	}
	for _, cfg := range rt.Configs {
		if cfg.Name == "" {
			return apiErr(kerr.InvalidConfig, "A topic config has an empty name.")
		}
	}
	var assignment [][]int32
	if len(rt.ReplicaAssignment) > 0 {
		if rt.ReplicationFactor != -1 {
			return apiErr(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if rt.NumPartitions != -1 {
			return apiErr(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		assignment = make([][]int32, len(rt.ReplicaAssignment))
		rf := -1
		for _, a := range rt.ReplicaAssignment {
			if a.Partition < 0 || int(a.Partition) >= len(assignment) {
				return apiErr(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
			}
			if assignment[a.Partition] != nil {
				return apiErr(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			if err := t.validAssignment(a.Replicas, rf); err != nil {
				return err
			}
			assignment[a.Partition], rf = a.Replicas, len(a.Replicas)
		}
	} else {
		switch {
		case rt.ReplicationFactor < -1 || rt.ReplicationFactor == 0:
			return apiErr(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
		case rt.NumPartitions < -1 || rt.NumPartitions == 0:
			return apiErr(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
		}
		n, rf := rt.NumPartitions, rt.ReplicationFactor
		if n == -1 {
			n = t.c.cfg.DefaultPartitions
		}
		if rf == -1 {
			rf = t.c.cfg.DefaultReplicationFactor
		}
		var err error
		if assignment, err = place(t.c.cfg.Rand, usableBrokers(t.base), 0, n, rf); err != nil {
			return err
		}
	}
	parts, err := t.newPartitions(assignment)
	if err != nil {
		return err
	}
	id := t.newTopicID()
	t.add(&metadata.TopicRecord{Name: rt.Topic, ID: id})
	for _, cfg := range rt.Configs {
		if cfg.Value != nil {
			t.add(&metadata.ConfigRecord{Resource: metadata.ResourceTopic, Name: rt.Topic, Key: cfg.Name, Value: *cfg.Value})
		}
	}
	for i, p := range parts {
		p.TopicID, p.Partition = id, int32(i)
		t.add(p)
	}
	st.TopicID = id
	st.NumPartitions = int32(len(parts))
	st.ReplicationFactor = int16(len(assignment[0]))
	return nil
}

// validAssignment checks a manual assignment: a non-empty set of
// registered brokers, of rf replicas if rf is not -1.
func (t *txn) validAssignment(replicas []int32, rf int) error {
	if len(replicas) == 0 {
		return apiErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	sorted := slices.Sorted(slices.Values(replicas))
	for i, id := range sorted {
		if _, ok := t.b.Broker(id); !ok {
			return apiErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return apiErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if rf != -1 && len(replicas) != rf {
		return apiErr(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return nil
}

// newPartitions builds the records of new partitions from their replicas:
// the ISR is the active replicas, the leader the first of them. Their
// topic and index are the caller's to set.
func (t *txn) newPartitions(assignment [][]int32) ([]*metadata.PartitionRecord, error) {
	out := make([]*metadata.PartitionRecord, len(assignment))
	for i, replicas := range assignment {
		isr := without(replicas, func(id int32) bool { return !t.active(id) })
		if len(isr) == 0 {
			return nil, apiErr(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", i)
		}
		out[i] = &metadata.PartitionRecord{Replicas: slices.Clone(replicas), ISR: isr, Leader: isr[0]}
	}
	return out, nil
}

func (t *txn) newTopicID() metadata.TopicID {
	for {
		var id metadata.TopicID
		r := t.c.cfg.Rand
		for i := 0; i < 16; i += 8 {
			v := r.Uint64()
			for j := range 8 {
				id[i+j] = byte(v >> (8 * j))
			}
		}
		if _, taken := t.b.Topic(id); !taken && id != (metadata.TopicID{}) {
			return id
		}
	}
}

// collision finds an existing topic whose name differs from name only by
// '.' against '_': the two would share metric names, so Kafka refuses the
// second. Names with few such characters are checked by lookup, others by
// a scan.
func (t *txn) collision(name string) (string, bool) {
	var at []int
	for i := 0; i < len(name); i++ {
		if name[i] == '.' || name[i] == '_' {
			at = append(at, i)
		}
	}
	if len(at) == 0 {
		return "", false
	}
	if len(at) > 10 {
		unified := strings.ReplaceAll(name, ".", "_")
		var found string
		t.base.EachTopic(func(tp *metadata.Topic) bool {
			if tp.Name() != name && strings.ReplaceAll(tp.Name(), ".", "_") == unified {
				found = tp.Name()
				return false
			}
			return true
		})
		return found, found != ""
	}
	b := []byte(name)
	for mask := range 1 << len(at) {
		for i, pos := range at {
			b[pos] = "._"[mask>>i&1]
		}
		if v := string(b); v != name {
			if _, ok := t.b.TopicByName(v); ok {
				return v, true
			}
		}
	}
	return "", false
}

// DeleteTopics handles DeleteTopics (API 20): each topic, by name (up to
// v5) or by name or id (v6+), is removed with its partitions and configs,
// all in one batch.
func (c *Controller) DeleteTopics(req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsResponse, []metadata.Record) {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.Version = req.Version
	topics := req.Topics
	if req.Version < 6 {
		topics = nil
		for _, name := range req.TopicNames {
			topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: &name})
		}
	}
	t := c.begin()
	deleted := map[metadata.TopicID]bool{}
	for _, rt := range topics {
		st := kmsg.NewDeleteTopicsResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		var err error
		var tp *metadata.Topic
		var ok bool
		switch {
		case rt.Topic != nil && rt.TopicID != [16]byte{}:
			err = apiErr(kerr.InvalidRequest, "You may not specify both topic name and topic id.")
		case c.cfg.DisableTopicDeletion:
			err = apiErr(kerr.TopicDeletionDisabled, "Topic deletion is disabled.")
		case rt.Topic != nil:
			if tp, ok = t.base.TopicByName(*rt.Topic); !ok {
				err = apiErr(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
			}
		default:
			if tp, ok = t.base.Topic(rt.TopicID); !ok {
				err = apiErr(kerr.UnknownTopicID, "This server does not host this topic ID.")
			}
		}
		if tp != nil {
			name := tp.Name()
			st.Topic, st.TopicID = &name, tp.ID()
			if !deleted[tp.ID()] {
				deleted[tp.ID()] = true
				t.add(&metadata.RemoveTopicRecord{ID: tp.ID()})
			}
		}
		st.ErrorCode, st.ErrorMessage = codeAndMessage(err)
		resp.Topics = append(resp.Topics, st)
	}
	recs, err := t.commit()
	if err != nil {
		dropped(resp.Topics, err, func(st *kmsg.DeleteTopicsResponseTopic, code int16, msg *string) {
			st.ErrorCode, st.ErrorMessage = code, msg
		})
		return resp, nil
	}
	if len(deleted) > 0 {
		c.log.Info("topics deleted", "topics", len(deleted))
	}
	return resp, recs
}

// CreatePartitions handles CreatePartitions (API 37): each topic grows to
// Count partitions, placed as CreateTopics places them (starting at the
// topic's partition count) or as the request assigns them, with the
// topic's replication factor.
func (c *Controller) CreatePartitions(req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, []metadata.Record) {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.Version = req.Version
	t := c.begin()
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		st.ErrorCode, st.ErrorMessage = codeAndMessage(t.createPartitions(&rt))
		resp.Topics = append(resp.Topics, st)
	}
	if req.ValidateOnly {
		return resp, nil
	}
	recs, err := t.commit()
	if err != nil {
		dropped(resp.Topics, err, func(st *kmsg.CreatePartitionsResponseTopic, code int16, msg *string) {
			st.ErrorCode, st.ErrorMessage = code, msg
		})
		return resp, nil
	}
	return resp, recs
}

func (t *txn) createPartitions(rt *kmsg.CreatePartitionsRequestTopic) error {
	tp, ok := t.b.TopicByName(rt.Topic)
	if !ok {
		return apiErr(kerr.UnknownTopicOrPartition, "This server does not host this topic-partition.")
	}
	have := tp.NumPartitions()
	switch {
	case rt.Count == have:
		return apiErr(kerr.InvalidPartitions, "Topic already has %d partition(s).", have)
	case rt.Count < have:
		return apiErr(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", rt.Topic, have, rt.Count)
	}
	add := rt.Count - have
	first, _ := tp.Partition(0)
	rf := len(first.Replicas())
	var assignment [][]int32
	if rt.Assignment != nil {
		if len(rt.Assignment) != int(add) {
			return apiErr(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", add, len(rt.Assignment))
		}
		for _, a := range rt.Assignment {
			if err := t.validAssignment(a.Replicas, rf); err != nil {
				return err
			}
			assignment = append(assignment, a.Replicas)
		}
	} else {
		var err error
		if assignment, err = place(t.c.cfg.Rand, usableBrokers(t.base), have, add, int16(rf)); err != nil {
			return err
		}
	}
	parts, err := t.newPartitions(assignment)
	if err != nil {
		return err
	}
	for i, p := range parts {
		p.TopicID, p.Partition = tp.ID(), have+int32(i)
		t.add(p)
	}
	return nil
}
