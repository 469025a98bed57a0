package broker

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
	"weak"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
)

// TestUnwatchedPartitionKeepsNoSession opens follower fetch sessions on
// a partition, closes some of them (a full request naming a session
// closes it, as a follower that starts over sends), and checks that the
// partition still marks the open ones and keeps none of the closed ones
// alive: a session holds an entry for every partition its follower
// follows. The marks fit inline in the partition's Source up to two and
// grow out of them past that, and come back when they fit again.
func TestUnwatchedPartitionKeepsNoSession(t *testing.T) {
	for _, tc := range []struct {
		open  int
		close []int // indexes of the sessions closed
	}{
		{open: 2, close: []int{1}},
		{open: 2, close: []int{0, 1}},
		{open: 3, close: []int{0}},    // back to two: inline again
		{open: 3, close: []int{2, 0}}, // down to one
		{open: 5, close: []int{1, 3}}, // three left: stays grown
	} {
		t.Run(fmt.Sprintf("%d-%v", tc.open, tc.close), func(t *testing.T) {
			p := &partition{}
			cache := fetchsession.NewCache(fetchsession.Config{Slots: 10})
			now := time.Now()
			req := func(id int32) *kmsg.FetchRequest {
				r := kmsg.NewPtrFetchRequest()
				r.Version = 13
				r.SessionID, r.SessionEpoch = id, 0
				rt := kmsg.NewFetchRequestTopic()
				rt.TopicID = [16]byte{1}
				rt.Partitions = append(rt.Partitions, kmsg.NewFetchRequestTopicPartition())
				r.Topics = append(r.Topics, rt)
				return r
			}
			var sessions []*fetchsession.Session
			for i := range tc.open {
				f, code := cache.Begin(req(0), int32(i+2), now)
				if code != 0 {
					t.Fatalf("begin: error %d", code)
				}
				reads := f.Pending(nil)
				for j := range reads {
					reads[j].Src = &p.src
				}
				f.Bind(reads)
				f.Wait() // the session watches its partitions from now on
				f.Finish(now, func(int32) fetchsession.Outcome { return fetchsession.Outcome{} })
				if f.Session().ID() == fetchsession.InvalidID {
					t.Fatal("the session was not cached")
				}
				sessions = append(sessions, f.Session())
			}
			var closed []weak.Pointer[fetchsession.Session]
			for _, i := range tc.close {
				s := sessions[i]
				sessions[i] = nil
				closed = append(closed, weak.Make(s))
				f, _ := cache.Begin(req(s.ID()), s.Replica(), now)
				f.Abandon()
			}
			var open []*fetchsession.Session
			for _, s := range sessions {
				if s != nil {
					open = append(open, s)
				}
			}
			var watching []*fetchsession.Session
			for _, m := range p.src.Marks() {
				watching = append(watching, m.Session())
			}
			if len(watching) != len(open) {
				t.Fatalf("the partition marks %d sessions, want the %d open", len(watching), len(open))
			}
			for _, s := range open {
				if !slices.Contains(watching, s) {
					t.Fatalf("open session %d is not among the partition's marks", s.ID())
				}
			}
			watching = nil
			for range 3 {
				runtime.GC()
			}
			for i, w := range closed {
				if w.Value() != nil {
					t.Fatalf("the partition keeps closed session %d alive", tc.close[i])
				}
			}
			runtime.KeepAlive(open)
		})
	}
}
