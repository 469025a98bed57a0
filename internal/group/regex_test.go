package group

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRegexTranscripts runs testdata/regex: consumer-protocol members
// of one group ("cg") subscribing by regex, each heartbeating as a
// principal that may DESCRIBE some topics. Commands:
//
//	topic name=<t> id=<n> partitions=<n> [internal]
//	delete-topic name=<t>
//	topics-changed
//	may-describe principal=<p> topics=<t,t|*>
//	join member=<m> [principal=<p>] [regex=<re>] [names=<t,t>]
//	beat member=<m>
//	converge members=<m,m>   (beats in that order until Stable)
//	leave member=<m>
//	advance d=<duration>
//	restart
//	regexes                  (the group's resolutions)
//
// A member without a principal heartbeats with no authorizer (every
// topic describable). Sessions last an hour; the regex refresh interval
// is the default 10m. Rewrite the expected output with -rewrite.
func TestRegexTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/regex", func(t *testing.T, path string) {
		// Sessions outlast the transcripts' waits, so that time passes
		// without fencing anyone.
		h := newHarness(t, func(c *Config) { c.ConsumerSessionTimeout = time.Hour })
		names := map[[16]byte]string{}
		members := map[string]*cgMember{}
		describes := map[string][]string{}
		memberOf := func(d *datadriven.TestData) *cgMember {
			var id string
			d.ScanArgs(t, "member", &id)
			m := members[id]
			if m == nil {
				d.Fatalf(t, "no member %s", id)
			}
			return m
		}
		show := func(m *cgMember, resp *kmsg.ConsumerGroupHeartbeatResponse) string {
			if resp != nil && resp.ErrorCode != 0 {
				return fmt.Sprintf("%s: %s\n", m.id, codeName(resp.ErrorCode))
			}
			var owned []string
			for id, ps := range m.owned {
				for _, p := range ps {
					owned = append(owned, fmt.Sprintf("%s/%d", names[id], p))
				}
			}
			slices.Sort(owned)
			return fmt.Sprintf("%s: epoch=%d owned=[%s]\n", m.id, m.epoch, strings.Join(owned, " "))
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "topic":
				var name string
				var id, partitions int
				d.ScanArgs(t, "name", &name)
				d.ScanArgs(t, "id", &id)
				d.ScanArgs(t, "partitions", &partitions)
				h.topics.Set(TopicInfo{Name: name, ID: tid(byte(id)), Partitions: int32(partitions), Internal: d.HasArg("internal")})
				names[tid(byte(id))] = name
				return "ok"
			case "delete-topic":
				var name string
				d.ScanArgs(t, "name", &name)
				h.topics.Delete(name)
				return "ok"
			case "topics-changed":
				h.c.TopicsChanged()
				h.sync()
				return "ok"
			case "may-describe":
				var p, topics string
				d.ScanArgs(t, "principal", &p)
				d.ScanArgs(t, "topics", &topics)
				describes[p] = strings.Split(topics, ",")
				return "ok"
			case "join":
				var id, principal, regex, topics string
				d.ScanArgs(t, "member", &id)
				d.MaybeScanArgs(t, "principal", &principal)
				d.MaybeScanArgs(t, "regex", &regex)
				d.MaybeScanArgs(t, "names", &topics)
				m := h.newCGMember("cg", id)
				if topics != "" {
					m.topics = strings.Split(topics, ",")
				}
				if regex != "" {
					m.regex = &regex
				}
				if principal != "" {
					m.describable = func(ts []string) []string {
						allowed := describes[principal]
						if slices.Contains(allowed, "*") {
							return ts
						}
						return slices.DeleteFunc(slices.Clone(ts), func(t string) bool { return !slices.Contains(allowed, t) })
					}
				}
				members[id] = m
				resp := m.beat()
				return show(m, resp)
			case "beat":
				m := memberOf(d)
				return show(m, m.beat())
			case "converge":
				var list string
				d.ScanArgs(t, "members", &list)
				var ms []*cgMember
				for _, id := range strings.Split(list, ",") {
					ms = append(ms, members[id])
				}
				converge(t, h, "cg", ms...)
				var out strings.Builder
				for _, m := range ms {
					out.WriteString(show(m, nil))
				}
				return out.String()
			case "leave":
				m := memberOf(d)
				resp := m.send(m.request(-1))
				delete(members, m.id)
				return fmt.Sprintf("%s left: %s\n", m.id, codeName(resp.ErrorCode))
			case "advance":
				var s string
				d.ScanArgs(t, "d", &s)
				dur, err := time.ParseDuration(s)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				h.advance(dur)
				return "ok"
			case "restart":
				h.restart()
				return "ok"
			case "regexes":
				var out strings.Builder
				h.inspect("cg", func(g *group) {
					if g == nil || g.consumer == nil {
						out.WriteString("no consumer group\n")
						return
					}
					c := g.consumer
					for _, r := range slices.Sorted(maps.Keys(c.regexes)) {
						fmt.Fprintf(&out, "%s -> [%s] at +%s\n", r, strings.Join(c.regexes[r].topics, " "), c.regexes[r].at.Sub(testStart))
					}
					fmt.Fprintf(&out, "group epoch %d\n", c.epoch)
				})
				return out.String()
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}
