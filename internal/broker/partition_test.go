package broker

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/fetchsession"
)

// TestUnwatchedPartitionKeepsNoSession opens follower fetch sessions
// on a partition, closes one of them (a full request naming it, as a
// follower that starts over sends), and checks that the partition, which
// another session still watches, does not keep the closed session
// alive: a session holds an entry for every partition its follower
// follows.
func TestUnwatchedPartitionKeepsNoSession(t *testing.T) {
	p := &partition{}
	cache := fetchsession.NewCache(fetchsession.Config{Slots: 10})
	now := time.Now()
	req := func(id, epoch int32) *kmsg.FetchRequest {
		r := kmsg.NewPtrFetchRequest()
		r.Version = 13
		r.SessionID, r.SessionEpoch = id, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = [16]byte{1}
		rt.Partitions = append(rt.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics = append(r.Topics, rt)
		return r
	}
	// open starts a session on p for follower id and caches it.
	open := func(follower int32) *fetchsession.Session {
		f, code := cache.Begin(req(0, 0), follower, now)
		if code != 0 {
			t.Fatalf("begin: error %d", code)
		}
		reads := f.Pending(nil)
		for i := range reads {
			reads[i].Src = p
		}
		f.Bind(reads)
		f.Wait() // the session watches its partitions from now on
		f.Finish(now, func(int32) fetchsession.Outcome { return fetchsession.Outcome{} })
		if f.Session().ID() == fetchsession.InvalidID {
			t.Fatal("the session was not cached")
		}
		return f.Session()
	}
	kept := open(2)
	closed := weak.Make(open(3))
	id := closed.Value().ID()
	// A full request naming the session closes it.
	f, _ := cache.Begin(req(id, 0), 3, now)
	f.Abandon()
	p.wmu.Lock()
	marks := len(p.watchers.marks)
	p.wmu.Unlock()
	if marks != 1 {
		t.Fatalf("%d marks on the partition after one of two sessions closed, want 1", marks)
	}
	for range 3 {
		runtime.GC()
	}
	if closed.Value() != nil {
		t.Fatal("the partition keeps a closed session alive")
	}
	runtime.KeepAlive(kept)
}
