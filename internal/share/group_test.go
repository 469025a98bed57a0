package share

import (
	"fmt"
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
