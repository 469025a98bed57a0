package share

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicID makes a stable topic id from a name and a generation (a
// re-created topic gets a new id).
func topicID(name string, gen int) [16]byte {
	var id [16]byte
	copy(id[:], name)
	id[15] = byte(gen)
	return id
}

type groupHarness struct {
	g      *Group
	now    time.Time
	topics map[string]TopicInfo
	gens   map[string]int
	names  map[[16]byte]string
}

func newGroupHarness() *groupHarness {
	return &groupHarness{
		g:      NewGroup("workers", GroupConfig{}),
		now:    testStart,
		topics: map[string]TopicInfo{},
		gens:   map[string]int{},
		names:  map[[16]byte]string{},
	}
}

func (h *groupHarness) lookup(name string) (TopicInfo, bool) {
	info, ok := h.topics[name]
	return info, ok
}

func (h *groupHarness) formatResponse(resp *kmsg.ShareGroupHeartbeatResponse) string {
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return fmt.Sprintf("error %s (%s)", kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error).Message, msg)
	}
	id := "<nil>"
	if resp.MemberID != nil {
		id = *resp.MemberID
	}
	s := fmt.Sprintf("member=%s epoch=%d interval=%dms", id, resp.MemberEpoch, resp.HeartbeatIntervalMillis)
	if resp.Assignment == nil {
		return s + " assignment=unchanged"
	}
	var parts []string
	for _, tp := range resp.Assignment.TopicPartitions {
		parts = append(parts, fmt.Sprintf("%s:%s", h.names[tp.TopicID], joinInts(tp.Partitions)))
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return s + " assignment=[]"
	}
	return s + " assignment=" + strings.Join(parts, " ")
}

func joinInts(ps []int32) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

func formatAssignment(a Assignment) string {
	if len(a) == 0 {
		return "[]"
	}
	parts := make([]string, len(a))
	for i, t := range a {
		parts[i] = t.Name + ":" + joinInts(t.Partitions)
	}
	return strings.Join(parts, " ")
}

func (h *groupHarness) do(t *testing.T, c *tcase) string {
	switch c.cmd {
	case "group":
		h.g = NewGroup("workers", GroupConfig{
			MaxSize:           int(mustInt(t, c, "max", 0)),
			SessionTimeout:    mustDuration(t, c, "session", 0),
			HeartbeatInterval: mustDuration(t, c, "interval", 0),
		})
		return "new group workers"

	case "topic":
		// topic name=partitions ... creates or grows topics; topic name=0
		// deletes; topic name=recreate:N re-creates with a new id.
		for _, a := range c.args {
			name, v, _ := strings.Cut(a, "=")
			recreate := strings.HasPrefix(v, "recreate:")
			n, err := strconv.Atoi(strings.TrimPrefix(v, "recreate:"))
			if err != nil {
				t.Fatalf("line %d: %v", c.line, err)
			}
			if n == 0 {
				delete(h.topics, name)
				continue
			}
			if _, ok := h.topics[name]; !ok || recreate {
				h.gens[name]++
			}
			id := topicID(name, h.gens[name])
			h.names[id] = name
			h.topics[name] = TopicInfo{ID: id, Partitions: int32(n)}
		}
		names := make([]string, 0, len(h.topics))
		for name, info := range h.topics {
			names = append(names, fmt.Sprintf("%s=%d", name, info.Partitions))
		}
		slices.Sort(names)
		return "topics " + strings.Join(names, " ")

	case "hb":
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID = c.arg("group", "workers")
		req.MemberID = c.arg("member", "")
		req.MemberEpoch = int32(mustInt(t, c, "epoch", 0))
		if subs := c.arg("subs", "-"); subs != "-" {
			req.SubscribedTopicNames = []string{}
			if subs != "" {
				req.SubscribedTopicNames = strings.Split(subs, ",")
			}
		}
		if rack := c.arg("rack", "-"); rack != "-" {
			req.RackID = &rack
		}
		resp := h.g.Heartbeat(req, ClientInfo{ClientID: "client-" + req.MemberID, ClientHost: "/127.0.0.1"}, h.lookup, h.now)
		return h.formatResponse(resp)

	case "time":
		d, err := time.ParseDuration(strings.TrimPrefix(c.bare()[0], "+"))
		if err != nil {
			t.Fatalf("line %d: %v", c.line, err)
		}
		h.now = h.now.Add(d)
		return fmt.Sprintf("now +%s", h.now.Sub(testStart))

	case "expire":
		fenced := h.g.Expire(h.now)
		next := "none"
		if d, ok := h.g.NextDeadline(); ok {
			next = "+" + d.Sub(h.now).String()
		}
		return fmt.Sprintf("fenced %v, next session deadline %s", fenced, next)

	case "describe":
		d := h.g.Describe()
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s state=%s epoch=%d assignment-epoch=%d assignor=%s", d.GroupID, d.GroupState, d.GroupEpoch, d.AssignmentEpoch, d.Assignor)
		for _, m := range d.Members {
			rack := "-"
			if m.RackID != nil {
				rack = *m.RackID
			}
			var parts []string
			for _, tp := range m.Assignment.TopicPartitions {
				parts = append(parts, tp.Topic+":"+joinInts(tp.Partitions))
			}
			fmt.Fprintf(&sb, "\n  %s epoch=%d client=%s rack=%s subs=%s assigned=[%s]", m.MemberID, m.MemberEpoch, m.ClientID, rack, strings.Join(m.SubscribedTopicNames, ","), strings.Join(parts, " "))
		}
		return sb.String()
	}
	t.Fatalf("line %d: unknown command %q", c.line, c.cmd)
	return ""
}

func TestGroupTranscripts(t *testing.T) {
	transcripts(t, "group_*.txt", func(t *testing.T) func(t *testing.T, c *tcase) string {
		return newGroupHarness().do
	})
}

// TestGroupProperties drives a Group with random joins, heartbeats (with
// current and future epochs), leaves, topic changes and session expiry,
// and checks: the group epoch never goes back; members answer with epochs
// no greater than it; a future epoch is fenced; and once every member has
// heartbeated after the last change, the members' assignments follow the
// simple assignor's rule.
func TestGroupProperties(t *testing.T) {
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		h := newGroupHarness()
		h.g = NewGroup("workers", GroupConfig{MaxSize: 8})
		ids := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
		names := []string{"t0", "t1", "t2"}
		epochs := map[string]int32{} // what each live member last heard
		subs := map[string][]string{}
		lastEpoch := int32(0)
		for step := range 300 {
			id := ids[rng.IntN(len(ids))]
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.GroupID, req.MemberID = "workers", id
			switch k := rng.IntN(100); {
			case k < 8: // topics change
				name := names[rng.IntN(len(names))]
				n := rng.IntN(6)
				if n == 0 {
					delete(h.topics, name)
				} else {
					h.topics[name] = TopicInfo{ID: topicID(name, 1), Partitions: int32(n)}
				}
				continue
			case k < 12:
				h.now = h.now.Add(time.Duration(rng.IntN(50)) * time.Second)
				for _, f := range h.g.Expire(h.now) {
					delete(epochs, f)
				}
				continue
			case k < 30: // join
				req.MemberEpoch = 0
				for _, n := range names {
					if rng.IntN(2) == 0 {
						req.SubscribedTopicNames = append(req.SubscribedTopicNames, n)
					}
				}
				if len(req.SubscribedTopicNames) == 0 {
					req.SubscribedTopicNames = names[:1]
				}
			case k < 36:
				req.MemberEpoch = -1
			default:
				e, ok := epochs[id]
				if !ok {
					continue
				}
				req.MemberEpoch = e
				if rng.IntN(10) == 0 {
					req.MemberEpoch = e + 1 + int32(rng.IntN(3)) // from the future
				}
				if rng.IntN(6) == 0 {
					req.SubscribedTopicNames = []string{names[rng.IntN(len(names))]}
				}
			}
			resp := h.g.Heartbeat(req, ClientInfo{}, h.lookup, h.now)
			if h.g.Epoch() < lastEpoch {
				t.Fatalf("seed %d step %d: group epoch went from %d to %d", seed, step, lastEpoch, h.g.Epoch())
			}
			lastEpoch = h.g.Epoch()
			if resp.ErrorCode != 0 {
				if _, live := epochs[id]; live && req.MemberEpoch > epochs[id] && resp.ErrorCode != kerr.FencedMemberEpoch.Code {
					t.Fatalf("seed %d step %d: future epoch answered with %d", seed, step, resp.ErrorCode)
				}
				if resp.ErrorCode == kerr.FencedMemberEpoch.Code {
					// A fenced client forgets its epoch and rejoins later.
					delete(epochs, id)
					h.g.Heartbeat(&kmsg.ShareGroupHeartbeatRequest{GroupID: "workers", MemberID: id, MemberEpoch: -1}, ClientInfo{}, h.lookup, h.now)
				}
				continue
			}
			if req.MemberEpoch == -1 {
				delete(epochs, id)
				delete(subs, id)
				continue
			}
			if resp.MemberEpoch > h.g.Epoch() {
				t.Fatalf("seed %d step %d: member epoch %d above group epoch %d", seed, step, resp.MemberEpoch, h.g.Epoch())
			}
			epochs[id] = resp.MemberEpoch
			if req.SubscribedTopicNames != nil {
				s := slices.Clone(req.SubscribedTopicNames)
				slices.Sort(s)
				subs[id] = slices.Compact(s)
			}
		}
		// Everyone heartbeats until nothing changes, then the assignment
		// must follow the rule.
		for range 3 {
			for id, e := range epochs {
				resp := h.g.Heartbeat(&kmsg.ShareGroupHeartbeatRequest{GroupID: "workers", MemberID: id, MemberEpoch: e}, ClientInfo{}, h.lookup, h.now)
				if resp.ErrorCode != 0 {
					t.Fatalf("seed %d: final heartbeat of %s at %d: %d", seed, id, e, resp.ErrorCode)
				}
				epochs[id] = resp.MemberEpoch
			}
		}
		var members []AssignMember
		got := map[string]Assignment{}
		for id := range epochs {
			members = append(members, AssignMember{ID: id, Topics: subs[id]})
			a, ok := h.g.MemberAssignment(id)
			if !ok {
				t.Fatalf("seed %d: %s missing", seed, id)
			}
			got[id] = a
			if epochs[id] != h.g.Epoch() {
				t.Fatalf("seed %d: %s at epoch %d, group at %d", seed, id, epochs[id], h.g.Epoch())
			}
		}
		checkAssignment(t, members, h.topics, got)
		if d := h.g.Describe(); len(d.Members) != len(epochs) || (d.GroupState == "Empty") != (len(epochs) == 0) {
			t.Fatalf("seed %d: describe has %d members in state %s, want %d", seed, len(d.Members), d.GroupState, len(epochs))
		}
	}
}

func TestMemberAssignmentIsACopy(t *testing.T) {
	g := NewGroup("g", GroupConfig{})
	lookup := func(string) (TopicInfo, bool) { return TopicInfo{ID: topicID("t", 1), Partitions: 2}, true }
	g.Heartbeat(&kmsg.ShareGroupHeartbeatRequest{GroupID: "g", MemberID: "m", SubscribedTopicNames: []string{"t"}}, ClientInfo{}, lookup, testStart)
	a, _ := g.MemberAssignment("m")
	a[0].Partitions[0] = 99
	b, _ := g.MemberAssignment("m")
	if b[0].Partitions[0] != 0 {
		t.Fatalf("changing a returned assignment changed the group: %v", b)
	}
	if g.Empty() {
		t.Fatal("group with a member is empty")
	}
}
