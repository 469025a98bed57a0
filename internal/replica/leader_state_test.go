package replica

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestLeaderStateTranscript drives the leader's pure state (follower
// progress, high watermark, ISR decisions) through the transcripts in
// testdata/leader_state/*.txt. Commands:
//
//	leader self=1 replicas=(1,2,3) isr=(1,2,3) epoch=E pepoch=P leo=N hw=N [lag=30s] [minisr=N hold] [ineligible=(3)] [registered=(3:10)]
//	append n=N             leader log grows by N
//	session id=2           follower 2 fetches in its session without naming the partition (noted for noteLEO)
//	fetch id=2 offset=N [bepoch=B]   a follower fetch at offset, with its broker epoch
//	advance d=15s          the clock moves
//	shrink                 the periodic ISR check
//	commit                 the controller accepts the proposal in flight
//	reject                 the proposal fails in a way that allows retrying
//	metadata isr=(1,2) pepoch=P [replicas=(...)]   metadata applies a new ISR
//
// Each prints the high watermark, the committed ISR, the proposal in
// flight, "compact" while no follower's state is made yet (see expand),
// and any new proposal.
func TestLeaderStateTranscript(t *testing.T) {
	datadriven.Walk(t, "testdata/leader_state", func(t *testing.T, path string) {
		var (
			s            *leaderState
			l            leading // s with its rules
			leo          int64
			now          = time.Unix(1_000_000, 0)
			sessionFetch = map[int32]time.Time{}
		)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var proposed *ISRChange
			switch d.Cmd {
			case "leader":
				var self, epoch, pepoch int
				var hw int64
				d.ScanArgs(t, "self", &self)
				d.ScanArgs(t, "epoch", &epoch)
				d.ScanArgs(t, "pepoch", &pepoch)
				d.ScanArgs(t, "leo", &leo)
				d.ScanArgs(t, "hw", &hw)
				lag := 30 * time.Second
				if d.HasArg("lag") {
					var ls string
					d.ScanArgs(t, "lag", &ls)
					lag = mustDuration(t, ls)
				}
				st := PartitionState{Leader: int32(self), LeaderEpoch: int32(epoch), PartitionEpoch: int32(pepoch), Replicas: ids(t, d, "replicas"), ISR: ids(t, d, "isr")}
				rules := &leaderRules{self: int32(self), maxLag: lag}
				s = newLeaderState(rules, st, leo, hw, now)
				l = leading{s, rules}
				if d.HasArg("minisr") {
					var minISR int
					d.ScanArgs(t, "minisr", &minISR)
					s.minISR = int16(minISR)
					rules.holdUnderMinISR = d.HasArg("hold")
				}
				var out []int32
				if d.HasArg("ineligible") {
					out = ids(t, d, "ineligible")
				}
				registered := map[int32]int64{}
				if arg, ok := d.Arg("registered"); ok {
					for _, v := range arg.Vals {
						var id int32
						var epoch int64
						if _, err := fmt.Sscanf(v, "%d:%d", &id, &epoch); err != nil {
							t.Fatalf("registered %q: %v", v, err)
						}
						registered[id] = epoch
					}
				}
				rules.eligible = func(id int32, brokerEpoch int64) bool {
					if e, ok := registered[id]; ok && brokerEpoch >= 0 && e != brokerEpoch {
						return false
					}
					return !slices.Contains(out, id)
				}
				l.advanceHW(leo, now)
			case "append":
				var n int64
				d.ScanArgs(t, "n", &n)
				leo += n
				l.noteLEO(leo, func(id int32) time.Time { return sessionFetch[id] })
				l.advanceHW(leo, now)
			case "session":
				var id int
				d.ScanArgs(t, "id", &id)
				sessionFetch[int32(id)] = now
			case "fetch":
				var id int
				var off int64
				d.ScanArgs(t, "id", &id)
				d.ScanArgs(t, "offset", &off)
				bepoch := int64(-1)
				if d.HasArg("bepoch") {
					d.ScanArgs(t, "bepoch", &bepoch)
				}
				proposed = l.fetched(int32(id), off, leo, bepoch, now)
				l.advanceHW(leo, now)
			case "advance":
				var ds string
				d.ScanArgs(t, "d", &ds)
				now = now.Add(mustDuration(t, ds))
			case "shrink":
				proposed = l.maybeShrink(leo, now)
			case "commit":
				if s.inFlight() == nil {
					return "error: nothing in flight"
				}
				s.setISR(s.pending.NewISR)
				s.partitionEpoch++
				s.pending = nil
				l.advanceHW(leo, now)
			case "reject":
				if s.inFlight() != nil {
					s.pending = nil
				}
			case "metadata":
				var pepoch int
				d.ScanArgs(t, "pepoch", &pepoch)
				st := PartitionState{Leader: l.rules.self, LeaderEpoch: s.leaderEpoch, PartitionEpoch: int32(pepoch), Replicas: s.replicas(), ISR: ids(t, d, "isr")}
				if d.HasArg("replicas") {
					st.Replicas = ids(t, d, "replicas")
				}
				l.setAssignment(st, now)
				l.advanceHW(leo, now)
			default:
				t.Fatalf("unknown command %q", d.Cmd)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "leo=%d hw=%d isr=%v pepoch=%d", leo, s.hw, s.isr(), s.partitionEpoch)
			if p := s.inFlight(); p != nil {
				fmt.Fprintf(&b, " inflight=%v", p.NewISR)
			}
			if s.compact() && len(s.replicas()) > 1 {
				b.WriteString(" compact")
			}
			if proposed != nil {
				fmt.Fprintf(&b, "\npropose isr=%v epoch=%d pepoch=%d", proposed.NewISR, proposed.LeaderEpoch, proposed.PartitionEpoch)
				if slices.ContainsFunc(proposed.BrokerEpochs, func(e int64) bool { return e >= 0 }) {
					fmt.Fprintf(&b, " broker-epochs=%v", proposed.BrokerEpochs)
				}
			}
			return b.String()
		})
	})
}

func ids(t *testing.T, d *datadriven.TestData, key string) []int32 {
	arg, ok := d.Arg(key)
	if !ok {
		t.Fatalf("missing %s", key)
	}
	var out []int32
	for _, v := range arg.Vals {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		out = append(out, int32(n))
	}
	return out
}

func mustDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
