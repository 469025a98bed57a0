package fetchsession

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

// TestClientTranscripts drives a Client through testdata/client/*.txt.
// Commands:
//
//	client                        a new client
//	want k=t:p off=N [epoch=N]    fetch t:p from offset N
//	pause k=t:p
//	delete k=t:p
//	next                          build the next request
//	answer [err=CODE] id=N [keys=(t:p,...)]   the answer to the last request
//	failed                        the last request got no answer
func TestClientTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/client", func(t *testing.T, path string) {
		var c *Client[string, int]
		var last Plan[Key[string]]
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			k := ""
			if d.HasArg("k") {
				d.ScanArgs(t, "k", &k)
			}
			switch d.Cmd {
			case "client":
				c = NewClient[string, int]()
				return ""
			case "want":
				var off int
				d.ScanArgs(t, "off", &off)
				epoch := -1
				if d.HasArg("epoch") {
					d.ScanArgs(t, "epoch", &epoch)
				}
				c.Want(tk(k), PartitionData{FetchOffset: int64(off), LogStartOffset: -1, MaxBytes: 100, LeaderEpoch: int32(epoch), LastFetchedEpoch: -1})
				return ""
			case "pause":
				c.Pause(tk(k))
				return ""
			case "delete":
				c.Delete(tk(k))
				return ""
			case "next":
				last = c.Next()
				kind := "incremental"
				if last.Full {
					kind = "full"
				}
				var send []string
				for _, k := range last.Send {
					send = append(send, fmt.Sprintf("%s@%d", ks(k), c.Data(c.slot(c.find(k))).FetchOffset))
				}
				var forget []string
				for _, k := range last.Forget {
					forget = append(forget, ks(k))
				}
				slices.Sort(send)
				slices.Sort(forget)
				return fmt.Sprintf("%s id=%d epoch=%d send=[%s] forget=[%s]", kind, last.SessionID, last.Epoch, strings.Join(send, " "), strings.Join(forget, " "))
			case "answer":
				var code, id int
				if d.HasArg("err") {
					d.ScanArgs(t, "err", &code)
				}
				d.ScanArgs(t, "id", &id)
				var keys []Key[string]
				if arg, ok := d.Arg("keys"); ok {
					for _, v := range arg.Vals {
						keys = append(keys, tk(v))
					}
				}
				ok := c.Answered(last, int16(code), int32(id), keys)
				return fmt.Sprintf("use=%t next: id=%d epoch=%d", ok, c.id, c.epoch)
			case "failed":
				c.Failed()
				return fmt.Sprintf("next: id=%d epoch=%d", c.id, c.epoch)
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

// TestClientAgainstCache runs a Client against a Cache through random
// changes of what the fetcher wants, session errors and lost answers,
// and checks after every answered request that the broker's session
// holds exactly the partitions, with exactly the data, the client
// believes it does.
func TestClientAgainstCache(t *testing.T) {
	for seed := range int64(20) {
		t.Run(strconv.Itoa(int(seed)), func(t *testing.T) {
			ops := make([]byte, 400)
			r := uint64(seed*7919 + 1)
			for i := range ops {
				r = r*6364136223846793005 + 1442695040888963407
				ops[i] = byte(r >> 56)
			}
			checkClientAgainstCache(t, ops)
		})
	}
}

func FuzzClientAgainstCache(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte{0, 0, 0, 200, 201, 202, 203, 40, 41, 90, 250, 251})
	f.Fuzz(func(t *testing.T, ops []byte) {
		checkClientAgainstCache(t, ops)
	})
}

// checkClientAgainstCache plays ops (one byte each) between a Client
// and a Cache of one slot; see TestClientAgainstCache.
func checkClientAgainstCache(t *testing.T, ops []byte) {
	cache := NewCache(Config{Slots: 1, NewID: seqIDs()})
	c := NewClient[string, int]()
	parts := map[string]*fakePartition{}
	part := func(k string) *fakePartition {
		if parts[k] == nil {
			parts[k] = &fakePartition{name: k}
		}
		return parts[k]
	}
	key := func(b byte) string { return fmt.Sprintf("t%d:%d", b%3, (b/3)%4) }
	for i, op := range ops {
		arg := byte(0)
		if i+1 < len(ops) {
			arg = ops[i+1]
		}
		switch op % 9 {
		case 0, 1, 2:
			c.Want(tk(key(arg)), PartitionData{FetchOffset: int64(arg % 5), LogStartOffset: -1, MaxBytes: 100, LeaderEpoch: -1, LastFetchedEpoch: -1})
		case 3:
			c.Pause(tk(key(arg)))
		case 4:
			c.Delete(tk(key(arg)))
		case 5:
			p := part(key(arg))
			p.hw++
			p.src.MarkAll()
		case 6, 7:
			pl := c.Next()
			req := planRequest(c, pl)
			f, code := cache.Begin(req, -1, testNow)
			var keys []Key[string]
			var sid int32
			if code == 0 {
				outcomes := map[int32]Outcome{}
				reads := f.Pending(nil)
				for j := range reads {
					r := &reads[j]
					p := part(key2(r.Topic, r.Partition))
					r.Src = &p.src
					outcomes[r.Index] = p.read(r.PartitionData)
				}
				f.Bind(reads)
				res := f.Finish(testNow, func(i int32) Outcome { return outcomes[i] })
				code, sid = res.ErrorCode, res.SessionID
				for _, in := range res.Include {
					keys = append(keys, tk(key2(in.Topic, in.Partition)))
				}
			}
			if op%9 == 7 {
				c.Failed() // the answer was lost
				continue
			}
			if c.Answered(pl, code, sid, keys) && sid != InvalidID {
				compareSession(t, cache, c, sid)
			}
		case 8:
			// Another client takes the only slot (a follower's session
			// evicts a consumer's): the next incremental request finds
			// no session.
			other := NewClient[string, int]()
			other.Want(tk("t0:0"), PartitionData{MaxBytes: 1})
			f, _ := cache.Begin(planRequest(other, other.Next()), 2, testNow)
			f.Pending(nil)
			f.Finish(testNow, func(int32) Outcome { return Outcome{} })
		}
	}
}

var testNow = testTime()

func seqIDs() func() int32 {
	n := int32(0)
	return func() int32 { n++; return n }
}

func key2(ref TopicRef, p int32) string { return nameOf(ref.ID) + ":" + strconv.Itoa(int(p)) }

// tk is the Key "topic:partition" names; ks the name of a Key.
func tk(s string) Key[string] {
	topic, ps, _ := strings.Cut(s, ":")
	p, err := strconv.Atoi(ps)
	if err != nil {
		panic("bad key " + s)
	}
	return Key[string]{topic, int32(p)}
}

func ks(k Key[string]) string { return k.Topic + ":" + strconv.Itoa(int(k.Partition)) }

// planRequest is the v17 Fetch a plan makes.
func planRequest(c *Client[string, int], pl Plan[Key[string]]) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version = 17
	r.SessionID, r.SessionEpoch = pl.SessionID, pl.Epoch
	for _, k := range pl.Send {
		topic, p := k.Topic, k.Partition
		d := c.Data(c.Get(k))
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(p), d.FetchOffset, d.MaxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = d.LeaderEpoch, d.LastFetchedEpoch, d.LogStartOffset
		rt := topicOf(r, topic)
		rt.Partitions = append(rt.Partitions, rp)
	}
	for _, k := range pl.Forget {
		topic, p := k.Topic, k.Partition
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.TopicID = idOf(topic)
		ft.Partitions = []int32{int32(p)}
		r.ForgottenTopics = append(r.ForgottenTopics, ft)
	}
	return r
}

// compareSession fails unless session id holds exactly the partitions
// the client believes are in it, with the data it sent.
func compareSession(t *testing.T, cache *Cache, c *Client[string, int], id int32) {
	t.Helper()
	cache.mu.Lock()
	s := cache.sessions[id]
	cache.mu.Unlock()
	if s == nil {
		t.Fatalf("session %d answered but not cached", id)
	}
	server := map[string]PartitionData{}
	s.mu.Lock()
	for i := range s.entries {
		if e := &s.entries[i]; e.used() {
			server[key2(s.topics[e.topic], e.partition)] = s.data(e)
		}
	}
	s.mu.Unlock()
	client := map[string]PartitionData{}
	for i := range c.n {
		if p := c.slot(i); p.has(fUsed) && p.has(fInSession) {
			client[ks(c.keyOf(p))] = c.Data(p)
		}
	}
	if fmt.Sprint(server) != fmt.Sprint(client) {
		t.Fatalf("session %d holds\n%v\nthe client believes\n%v", id, server, client)
	}
}

var _ = kerr.FetchSessionIDNotFound

func TestNextEpoch(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{{0, 1}, {1, 2}, {-1, -1}, {-5, -1}, {1<<31 - 1, 1}} {
		if got := NextEpoch(tc.in); got != tc.want {
			t.Errorf("NextEpoch(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
