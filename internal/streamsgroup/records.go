package streamsgroup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The group's durable state is two kinds of values, which the owner
// stores under keys of its own (for the group coordinator: records of
// __consumer_offsets keyed by group, and by group and member):
//
//   - the group value: epochs, the topology, the validated topology epoch
//     and the fingerprint of the topics it was configured against;
//   - one member value per member: its metadata, epochs, state, and its
//     assigned, pending and target tasks.
//
// Each value is self-sufficient (compaction keeps only the latest per
// key). A value is a version byte followed by JSON; decoders refuse
// unknown versions, trailing bytes and values that break the invariants
// below rather than guess.

const valueVersion byte = 0

// Decoding limits: a value larger than this is refused.
const maxValueBytes = 16 << 20

// ErrBadValue is returned for a stored value this code cannot read.
var ErrBadValue = errors.New("streamsgroup: bad stored value")

type groupValue struct {
	Epoch           int32     `json:"epoch"`
	AssignmentEpoch int32     `json:"assignmentEpoch"`
	Topology        *Topology `json:"topology,omitempty"`
	Validated       int32     `json:"validated"`
	Fingerprint     uint64    `json:"fingerprint"`
	EndpointEpoch   int32     `json:"endpointEpoch"`
}

type assignmentValue struct {
	Active  []taskList `json:"a,omitempty"`
	Standby []taskList `json:"s,omitempty"`
	Warmup  []taskList `json:"w,omitempty"`
}

type memberValue struct {
	RackID             *string           `json:"rack,omitempty"`
	ClientID           string            `json:"clientId"`
	ClientHost         string            `json:"clientHost"`
	RebalanceTimeoutMs int32             `json:"rebalanceTimeoutMs"`
	TopologyEpoch      int32             `json:"topologyEpoch"`
	ProcessID          string            `json:"processId"`
	UserEndpoint       *Endpoint         `json:"endpoint,omitempty"`
	ClientTags         map[string]string `json:"tags,omitempty"`
	TaskOffsets        []TaskOffset      `json:"offsets,omitempty"`
	TaskEndOffsets     []TaskOffset      `json:"endOffsets,omitempty"`
	Epoch              int32             `json:"epoch"`
	PrevEpoch          int32             `json:"prevEpoch"`
	State              MemberState       `json:"state"`
	Assigned           assignmentValue   `json:"assigned"`
	Pending            assignmentValue   `json:"pending"`
	Target             assignmentValue   `json:"target"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only maps with string keys, slices and scalars: impossible.
		panic(fmt.Sprintf("streamsgroup: encoding %T: %v", v, err))
	}
	return append([]byte{valueVersion}, b...)
}

func decode(b []byte, v any) error {
	if len(b) == 0 || len(b) > maxValueBytes {
		return fmt.Errorf("%w: %d bytes", ErrBadValue, len(b))
	}
	if b[0] != valueVersion {
		return fmt.Errorf("%w: version %d", ErrBadValue, b[0])
	}
	dec := json.NewDecoder(bytes.NewReader(b[1:]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrBadValue, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrBadValue)
	}
	return nil
}

// GroupValue returns the group's record value.
func (g *Group) GroupValue() []byte {
	return encode(groupValue{
		Epoch: g.Epoch, AssignmentEpoch: g.AssignmentEpoch, Topology: g.Topology,
		Validated: g.ValidatedTopologyEpoch, Fingerprint: g.Fingerprint, EndpointEpoch: g.EndpointEpoch,
	})
}

// MemberValue returns a member's record value, nil if it is not a member.
func (g *Group) MemberValue(id string) []byte {
	m := g.Members[id]
	if m == nil {
		return nil
	}
	return encode(memberValue{
		RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost, RebalanceTimeoutMs: m.RebalanceTimeoutMs,
		TopologyEpoch: m.TopologyEpoch, ProcessID: m.ProcessID, UserEndpoint: m.UserEndpoint, ClientTags: m.ClientTags,
		TaskOffsets: m.TaskOffsets, TaskEndOffsets: m.TaskEndOffsets,
		Epoch: m.Epoch, PrevEpoch: m.PrevEpoch, State: m.State,
		Assigned: assignmentToValue(m.Assigned), Pending: assignmentToValue(m.Pending), Target: assignmentToValue(m.Target),
	})
}

func assignmentToValue(a Assignment) assignmentValue {
	return assignmentValue{Active: a.Active.lists(), Standby: a.Standby.lists(), Warmup: a.Warmup.lists()}
}

func assignmentFromValue(v assignmentValue) Assignment {
	return Assignment{Active: tasksFromLists(v.Active), Standby: tasksFromLists(v.Standby), Warmup: tasksFromLists(v.Warmup)}
}

// ReplayGroup applies a stored group value to g.
func (g *Group) ReplayGroup(b []byte) error {
	var v groupValue
	if err := decode(b, &v); err != nil {
		return err
	}
	if v.Epoch < 0 || v.AssignmentEpoch < 0 || v.AssignmentEpoch > v.Epoch {
		return fmt.Errorf("%w: epochs %d/%d", ErrBadValue, v.Epoch, v.AssignmentEpoch)
	}
	if v.Topology != nil {
		if !slices.IsSortedFunc(v.Topology.Subtopologies, func(a, b Subtopology) int { return strings.Compare(a.ID, b.ID) }) {
			return fmt.Errorf("%w: subtopologies out of order", ErrBadValue)
		}
		if err := v.Topology.Validate(); err != nil {
			return fmt.Errorf("%w: %v", ErrBadValue, err)
		}
	}
	g.Epoch, g.AssignmentEpoch, g.Topology = v.Epoch, v.AssignmentEpoch, v.Topology
	g.ValidatedTopologyEpoch, g.Fingerprint, g.EndpointEpoch = v.Validated, v.Fingerprint, v.EndpointEpoch
	g.configured = nil
	return nil
}

// ReplayMember applies a stored member value to g, or removes the member
// when b is nil (a tombstone).
func (g *Group) ReplayMember(id string, b []byte) error {
	if b == nil {
		delete(g.Members, id)
		return nil
	}
	var v memberValue
	if err := decode(b, &v); err != nil {
		return err
	}
	if v.State < Stable || v.State > UnreleasedTasks {
		return fmt.Errorf("%w: member state %d", ErrBadValue, v.State)
	}
	m := newMember(id)
	m.RackID, m.ClientID, m.ClientHost, m.RebalanceTimeoutMs = v.RackID, v.ClientID, v.ClientHost, v.RebalanceTimeoutMs
	m.TopologyEpoch, m.ProcessID, m.UserEndpoint = v.TopologyEpoch, v.ProcessID, v.UserEndpoint
	if v.ClientTags != nil {
		m.ClientTags = v.ClientTags
	}
	m.TaskOffsets, m.TaskEndOffsets = v.TaskOffsets, v.TaskEndOffsets
	m.Epoch, m.PrevEpoch, m.State = v.Epoch, v.PrevEpoch, v.State
	m.Assigned, m.Pending, m.Target = assignmentFromValue(v.Assigned), assignmentFromValue(v.Pending), assignmentFromValue(v.Target)
	g.Members[id] = m
	return nil
}
