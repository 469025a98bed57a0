package streamsgroup

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type memTopics map[string]int32

func (m memTopics) Partitions(name string) (int32, bool) {
	n, ok := m[name]
	return n, ok
}

// TestTranscripts runs testdata/transcripts/*.txt. Commands:
//
//	config standbys=N max-size=N
//	topics            lines "name partitions" (replace all; "name -" deletes)
//	heartbeat member=ID epoch=E [process=P] [active=S_P,...] [standby=...] [warmup=...] [endpoint=host:port] [endpoint-epoch=N] [shutdown] [topology-epoch=N]
//	                  the input, if any, is the topology: lines
//	                  "sub=ID [src=a,b] [sink=x] [rsrc=name:partitions,...] [chg=name,...] [cop=s0+s1|r0]"
//	leave member=ID [epoch=-1]
//	remove member=ID  (session or rebalance timeout)
//	recheck           (the broker reports topics changed)
//	create            (the broker creates the topics the last heartbeat asked for)
//	describe
//	restart           (persist every record, rebuild a new group from them)
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		topics := memTopics{}
		var cfg Config
		g := New("app", cfg)
		var lastCreate []NewTopic
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "config":
				for _, a := range d.CmdArgs {
					n, _ := strconv.Atoi(a.Vals[0])
					switch a.Key {
					case "standbys":
						cfg.NumStandbyReplicas = n
					case "max-size":
						cfg.MaxSize = n
					}
				}
				g.SetConfig(cfg)
				return "ok\n"
			case "topics":
				for _, line := range lines(d.Input) {
					f := strings.Fields(line)
					if f[1] == "-" {
						delete(topics, f[0])
						continue
					}
					n, _ := strconv.Atoi(f[1])
					topics[f[0]] = int32(n)
				}
				return "ok\n"
			case "heartbeat":
				req := heartbeatRequest(t, d)
				if code, msg := ValidateRequest(req); code != 0 {
					return fmt.Sprintf("error %s: %s\n", kerr.ErrorForCode(code).(*kerr.Error).Message, msg)
				}
				res := g.Heartbeat(req, Client{ID: "client", Host: "/127.0.0.1"}, topics)
				lastCreate = res.Create
				return showResponse(res) + showGroup(g)
			case "leave":
				req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
				req.Group, req.MemberEpoch = "app", LeaveEpoch
				d.ScanArgs(t, "member", &req.MemberID)
				res := g.Leave(req)
				return showResponse(res) + showGroup(g)
			case "remove":
				var id string
				d.ScanArgs(t, "member", &id)
				var ch Changes
				g.Remove(id, &ch)
				return showChanges(ch) + showGroup(g)
			case "recheck":
				ch := g.RecheckTopics(topics)
				return showChanges(ch) + showGroup(g)
			case "create":
				var b strings.Builder
				for _, nt := range lastCreate {
					topics[nt.Name] = nt.Partitions
					fmt.Fprintf(&b, "created %s partitions=%d rf=%d\n", nt.Name, nt.Partitions, nt.ReplicationFactor)
				}
				return b.String()
			case "describe":
				return showDescribe(g.Describe())
			case "restart":
				ng := New("app", cfg)
				if err := ng.ReplayGroup(g.GroupValue()); err != nil {
					t.Fatal(err)
				}
				for _, id := range g.SortedMemberIDs() {
					if err := ng.ReplayMember(id, g.MemberValue(id)); err != nil {
						t.Fatal(err)
					}
				}
				before := showDescribe(g.Describe())
				g = ng
				g.RecheckTopics(topics)
				if after := showDescribe(g.Describe()); after != before {
					t.Fatalf("restart changed the group:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				return "restarted\n" + showGroup(g)
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func parseTasks(t *testing.T, s string) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	if s == "" {
		return out
	}
	by := map[string][]int32{}
	var order []string
	for _, tk := range strings.Split(s, ",") {
		sub, p, ok := strings.Cut(tk, "_")
		if !ok {
			t.Fatalf("bad task %q", tk)
		}
		n, _ := strconv.Atoi(p)
		if _, ok := by[sub]; !ok {
			order = append(order, sub)
		}
		by[sub] = append(by[sub], int32(n))
	}
	for _, sub := range order {
		out = append(out, kmsg.TaskIDs{SubtopologyID: sub, Partitions: by[sub]})
	}
	return out
}

func heartbeatRequest(t *testing.T, d *datadriven.TestData) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = "app"
	req.RebalanceTimeoutMillis = -1
	topologyEpoch := int32(-1)
	for _, a := range d.CmdArgs {
		v := ""
		if len(a.Vals) > 0 {
			v = a.Vals[0]
		}
		switch a.Key {
		case "member":
			req.MemberID = v
		case "group":
			req.Group = v
		case "epoch":
			n, _ := strconv.Atoi(v)
			req.MemberEpoch = int32(n)
		case "process":
			req.ProcessID = &v
		case "active":
			req.ActiveTasks = parseTasks(t, v)
		case "standby":
			req.StandbyTasks = parseTasks(t, v)
		case "warmup":
			req.WarmupTasks = parseTasks(t, v)
		case "endpoint":
			h, p, _ := strings.Cut(v, ":")
			n, _ := strconv.Atoi(p)
			req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: h, Port: uint16(n)}
		case "endpoint-epoch":
			n, _ := strconv.Atoi(v)
			req.EndpointInformationEpoch = int32(n)
		case "shutdown":
			req.ShutdownApplication = true
		case "topology-epoch":
			n, _ := strconv.Atoi(v)
			topologyEpoch = int32(n)
		case "rebalance-timeout":
			n, _ := strconv.Atoi(v)
			req.RebalanceTimeoutMillis = int32(n)
		case "instance":
			req.InstanceID = &v
		default:
			t.Fatalf("unknown argument %s", a.Key)
		}
	}
	if req.MemberEpoch == 0 && req.RebalanceTimeoutMillis == -1 {
		req.RebalanceTimeoutMillis = 300000
	}
	if req.MemberEpoch == 0 && req.ActiveTasks == nil {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	if ls := lines(d.Input); len(ls) > 0 {
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		top.Epoch = max(topologyEpoch, 0)
		for _, l := range ls {
			s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			for _, f := range strings.Fields(l) {
				k, v, _ := strings.Cut(f, "=")
				var items []string
				if v != "" {
					items = strings.Split(v, ",")
				}
				switch k {
				case "sub":
					s.SubtopologyID = v
				case "src":
					s.SourceTopics = items
				case "regex":
					s.SourceTopicRegex = items
				case "sink":
					s.RepartitionSinkTopics = items
				case "rsrc", "chg":
					for _, it := range items {
						name, ps, _ := strings.Cut(it, ":")
						n, _ := strconv.Atoi(ps)
						ti := kmsg.NewTopicInfo()
						ti.Topic, ti.NumPartitions = name, int32(n)
						if k == "rsrc" {
							s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, ti)
						} else {
							s.StateChangelogTopics = append(s.StateChangelogTopics, ti)
						}
					}
				case "cop":
					for _, grp := range strings.Split(v, ";") {
						cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
						for _, ix := range strings.Split(grp, "+") {
							n, _ := strconv.Atoi(ix[1:])
							if ix[0] == 's' {
								cg.SourceTopics = append(cg.SourceTopics, int16(n))
							} else {
								cg.RepartitionSourceTopics = append(cg.RepartitionSourceTopics, int16(n))
							}
						}
						s.CopartitionGroups = append(s.CopartitionGroups, cg)
					}
				default:
					t.Fatalf("unknown topology field %s", k)
				}
			}
			top.Subtopologies = append(top.Subtopologies, s)
		}
		req.Topology = &top
	}
	return req
}

func fmtTasks(ts []kmsg.TaskIDs) string {
	var parts []string
	for _, l := range ts {
		for _, p := range l.Partitions {
			parts = append(parts, fmt.Sprintf("%s_%d", l.SubtopologyID, p))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func showResponse(res Result) string {
	r := res.Response
	var b strings.Builder
	if r.ErrorCode != 0 {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		fmt.Fprintf(&b, "error %s: %s\n", kerr.ErrorForCode(r.ErrorCode).(*kerr.Error).Message, msg)
		return b.String()
	}
	fmt.Fprintf(&b, "member %s epoch=%d", r.MemberID, r.MemberEpoch)
	if r.ActiveTasks != nil {
		fmt.Fprintf(&b, " active=%s standby=%s warmup=%s", fmtTasks(r.ActiveTasks), fmtTasks(r.StandbyTasks), fmtTasks(r.WarmupTasks))
	}
	fmt.Fprintf(&b, " endpoint-epoch=%d\n", r.EndpointInformationEpoch)
	for _, s := range r.Status {
		fmt.Fprintf(&b, "status %d: %s\n", s.StatusCode, s.StatusDetail)
	}
	for _, e := range r.PartitionsByUserEndpoint {
		fmt.Fprintf(&b, "endpoint %s:%d active=", e.UserEndpoint.Host, e.UserEndpoint.Port)
		for _, tp := range e.ActivePartitions {
			fmt.Fprintf(&b, "%s%v", tp.Topic, tp.Partitions)
		}
		b.WriteString(" standby=")
		for _, tp := range e.StandbyPartitions {
			fmt.Fprintf(&b, "%s%v", tp.Topic, tp.Partitions)
		}
		b.WriteString("\n")
	}
	for _, nt := range res.Create {
		fmt.Fprintf(&b, "create %s partitions=%d\n", nt.Name, nt.Partitions)
	}
	b.WriteString(showChanges(res.Changes))
	return b.String()
}

func showChanges(ch Changes) string {
	var parts []string
	if ch.Group {
		parts = append(parts, "group")
	}
	ms := slices.Clone(ch.Members)
	slices.Sort(ms)
	for _, m := range ms {
		parts = append(parts, "member:"+m)
	}
	for _, m := range ch.Gone {
		parts = append(parts, "gone:"+m)
	}
	if len(parts) == 0 {
		return "persist nothing\n"
	}
	return "persist " + strings.Join(parts, " ") + "\n"
}

func showGroup(g *Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group epoch=%d assignment=%d state=%s\n", g.Epoch, g.AssignmentEpoch, g.State())
	for _, id := range g.SortedMemberIDs() {
		m := g.Members[id]
		fmt.Fprintf(&b, "  %s epoch=%d %s assigned=%s", id, m.Epoch, m.State, fmtAssignment(m.Assigned))
		if !m.Pending.empty() {
			fmt.Fprintf(&b, " pending=%s", fmtAssignment(m.Pending))
		}
		fmt.Fprintf(&b, " target=%s\n", fmtAssignment(m.Target))
	}
	return b.String()
}

func fmtAssignment(a Assignment) string {
	s := fmtTasks(a.Active.wire())
	if len(a.Standby) > 0 {
		s += "+s" + fmtTasks(a.Standby.wire())
	}
	if len(a.Warmup) > 0 {
		s += "+w" + fmtTasks(a.Warmup.wire())
	}
	return s
}

func showDescribe(d kmsg.StreamsGroupDescribeResponseGroup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s state=%s epoch=%d assignment=%d\n", d.Group, d.State, d.Epoch, d.AssignmentEpoch)
	if d.Topology != nil {
		fmt.Fprintf(&b, "topology epoch=%d", d.Topology.Epoch)
		if d.Topology.Subtopologies == nil {
			b.WriteString(" subtopologies=null")
		}
		b.WriteString("\n")
		for _, s := range d.Topology.Subtopologies {
			fmt.Fprintf(&b, "  sub %s src=%v sink=%v", s.SubtopologyID, s.SourceTopics, s.RepartitionSinkTopics)
			for _, ti := range s.RepartitionSourceTopics {
				fmt.Fprintf(&b, " rsrc=%s:%d", ti.Topic, ti.NumPartitions)
			}
			for _, ti := range s.StateChangelogTopics {
				fmt.Fprintf(&b, " chg=%s:%d", ti.Topic, ti.NumPartitions)
			}
			b.WriteString("\n")
		}
	}
	for _, m := range d.Members {
		fmt.Fprintf(&b, "  member %s epoch=%d process=%s assignment=%s/%s/%s target=%s/%s/%s\n", m.MemberID, m.MemberEpoch, m.ProcessID,
			fmtTasks(m.Assignment.ActiveTasks), fmtTasks(m.Assignment.StandbyTasks), fmtTasks(m.Assignment.WarmupTasks),
			fmtTasks(m.TargetAssignment.ActiveTasks), fmtTasks(m.TargetAssignment.StandbyTasks), fmtTasks(m.TargetAssignment.WarmupTasks))
	}
	return b.String()
}
