package fetchsession

import (
	"maps"
	"slices"
	"strconv"
	"testing"
	"unsafe"
)

// refClient is the Client's behaviour written the plain way (a map of
// partitions): TestClientLayout checks the Client's dense layout
// against it.
type refClient struct {
	epoch  int32
	parts  map[Key[string]]*refPartition
	queue  []Key[string]
	forget []Key[string]
}

type refPartition struct {
	value                                      int
	want                                       PartitionData
	asked                                      bool // wanted once: want holds what was asked
	wanted, inSession, inQueue, inForget, gone bool
}

func (c *refClient) get(k Key[string]) *refPartition {
	if p := c.parts[k]; p != nil && !p.gone {
		return p
	}
	return nil
}

func (c *refClient) add(k Key[string], v int) {
	p := c.parts[k]
	switch {
	case p == nil:
		c.parts[k] = &refPartition{value: v}
	case p.gone:
		p.value, p.gone = v, false
	}
}

func (c *refClient) want(k Key[string], d PartitionData) {
	if c.get(k) == nil {
		c.add(k, 0)
	}
	p := c.parts[k]
	changed := !p.inSession || p.want != d
	p.want, p.wanted, p.asked = d, true, true
	if changed && !p.inQueue {
		p.inQueue = true
		c.queue = append(c.queue, k)
	}
}

func (c *refClient) pause(k Key[string]) {
	p := c.get(k)
	if p == nil || !p.wanted {
		return
	}
	p.wanted = false
	if p.inSession && !p.inForget {
		p.inForget = true
		c.forget = append(c.forget, k)
	}
}

func (c *refClient) delete(k Key[string]) {
	p := c.get(k)
	if p == nil {
		return
	}
	c.pause(k)
	p.value, p.gone = 0, true
	if !p.inSession {
		delete(c.parts, k)
	}
}

func (c *refClient) next() (full bool, send, forget []Key[string]) {
	if c.epoch == InitialEpoch {
		for k, p := range c.parts {
			p.inQueue, p.inForget = false, false
			if p.gone {
				delete(c.parts, k)
				continue
			}
			p.inSession = p.wanted
			if p.wanted {
				send = append(send, k)
			}
		}
		c.queue, c.forget = nil, nil
		return true, send, nil
	}
	for _, k := range c.queue {
		p := c.parts[k]
		if p == nil || !p.inQueue {
			continue
		}
		p.inQueue = false
		if p.wanted {
			p.inSession = true
			send = append(send, k)
		}
	}
	for _, k := range c.forget {
		p := c.parts[k]
		if p == nil || !p.inForget {
			continue
		}
		p.inForget = false
		if p.wanted || !p.inSession {
			continue
		}
		p.inSession = false
		forget = append(forget, k)
		if p.gone {
			delete(c.parts, k)
		}
	}
	c.queue, c.forget = nil, nil
	return false, send, forget
}

// TestClientLayout plays random operations on a Client and on
// refClient over enough partitions to cross chunk boundaries, grow and
// shrink the index and free and reuse slots and topics (partitions
// added, deleted, added back; a topic gone and its name used again;
// sessions reset), and checks after each that both agree on every
// partition (value, data, wanted, in the session) and on every request
// (full or not, what it names and forgets), and that the index finds
// every slot in use.
func TestClientLayout(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(strconv.Itoa(int(seed)), func(t *testing.T) {
			r := seed*0x9e3779b97f4a7c15 + 1
			rnd := func(n int) int {
				r = r*6364136223846793005 + 1442695040888963407
				return int((r >> 33) % uint64(n))
			}
			c := NewClient[string, int]()
			ref := &refClient{parts: map[Key[string]]*refPartition{}}
			// Phases: grow to about 1,500 partitions, churn, shrink to
			// nothing (which lets the chunks go), grow again.
			for step := range 12000 {
				grow := step%6000 < 2500
				shrink := step%6000 >= 4500
				k := Key[string]{Topic: "t" + strconv.Itoa(rnd(5)), Partition: int32(rnd(300))}
				if rnd(50) == 0 {
					// Partitions past any dense range and negative ones.
					k.Partition = int32(rnd(3)-1) * (1<<31 - 1 - int32(rnd(5)))
				}
				switch op := rnd(20); {
				case op < 8 && !shrink || op < 2:
					// Blank (offset 0, no last fetched epoch, log start 0) a
					// time in twelve.
					d := PartitionData{FetchOffset: int64(rnd(3)), LogStartOffset: int64(rnd(2)), MaxBytes: 1,
						LeaderEpoch: int32(rnd(2)), LastFetchedEpoch: int32(rnd(2)) - 1}
					c.Want(k, d)
					ref.want(k, d)
				case op < 10:
					v := rnd(1000)
					c.Add(k, v).Value = v
					ref.add(k, v)
					ref.parts[k].value = v
				case op < 12:
					c.Pause(k)
					ref.pause(k)
				case op < 15 && !grow || op < 13:
					c.Delete(k)
					ref.delete(k)
				case op < 16 && shrink:
					// Everything of one topic goes.
					for p := range int32(300) {
						c.Delete(Key[string]{k.Topic, p})
						ref.delete(Key[string]{k.Topic, p})
					}
				default:
					checkLayout(t, step, c, ref)
					if rnd(10) == 0 {
						c.Failed()
						ref.epoch = InitialEpoch
					}
					pl := c.Next()
					full, send, forget := ref.next()
					if pl.Full != full || !sameKeys(pl.Send, send) || !sameKeys(pl.Forget, forget) {
						t.Fatalf("step %d: client plans full=%t send=%v forget=%v, want full=%t send=%v forget=%v", step, pl.Full, pl.Send, pl.Forget, full, send, forget)
					}
					c.Answered(pl, 0, 7, nil)
					ref.epoch = 1
				}
				if step%20 == 0 {
					checkLayout(t, step, c, ref)
				}
			}
			checkLayout(t, -1, c, ref)
		})
	}
}

func sameKeys(a, b []Key[string]) bool {
	cmp := func(x, y Key[string]) int {
		if x.Topic != y.Topic {
			if x.Topic < y.Topic {
				return -1
			}
			return 1
		}
		return int(x.Partition) - int(y.Partition)
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, cmp)
	slices.SortFunc(b, cmp)
	return slices.Equal(a, b)
}

func checkLayout(t *testing.T, step int, c *Client[string, int], ref *refClient) {
	t.Helper()
	live, wanted := 0, 0
	for k, rp := range ref.parts {
		p := c.Get(k)
		if rp.gone {
			if p != nil {
				t.Fatalf("step %d: deleted %v still got", step, k)
			}
			if i := c.find(k); i < 0 || !c.slot(i).has(fInSession) {
				t.Fatalf("step %d: deleted %v left the session's view before it was forgotten", step, k)
			}
			continue
		}
		live++
		if rp.wanted {
			wanted++
		}
		if p == nil {
			t.Fatalf("step %d: %v missing", step, k)
		}
		if p.Value != rp.value || (rp.asked && c.Data(p) != rp.want) || p.Wanted() != rp.wanted || p.has(fInSession) != rp.inSession {
			t.Fatalf("step %d: %v is %d %+v wanted=%t in session=%t, want %d %+v %t %t", step, k,
				p.Value, c.Data(p), p.Wanted(), p.has(fInSession), rp.value, rp.want, rp.wanted, rp.inSession)
		}
	}
	if c.Len() != live || c.Wanted() != wanted {
		t.Fatalf("step %d: Len %d Wanted %d, want %d %d", step, c.Len(), c.Wanted(), live, wanted)
	}
	ranged := map[Key[string]]bool{}
	c.Range(func(k Key[string], p *Partition[int]) bool {
		if c.Get(k) != p {
			t.Fatalf("step %d: Range gives %v a slot Get does not", step, k)
		}
		ranged[k] = true
		return true
	})
	if len(ranged) != live {
		t.Fatalf("step %d: Range gave %d partitions, want %d", step, len(ranged), live)
	}
	// Every slot in use is indexed once, each topic counts its slots,
	// and the free list holds exactly the other slots.
	used, extended, perTopic := 0, 0, map[int32]int32{}
	for i := range c.n {
		if p := c.slot(i); p.has(fUsed) {
			used++
			perTopic[p.topic]++
			if p.ext() > 0 {
				extended++
			}
			if c.find(c.keyOf(p)) != i {
				t.Fatalf("step %d: slot %d (%v) not found by its key", step, i, c.keyOf(p))
			}
		}
	}
	inIndex := 0
	for _, v := range c.index.cells {
		if v != 0 {
			inIndex++
		}
	}
	// Exactly the slots whose data is not blank hold an ext.
	if len(c.exts)-len(c.extsFree) != extended {
		t.Fatalf("step %d: %d exts in use, %d slots hold one", step, len(c.exts)-len(c.extsFree), extended)
	}
	if used != c.index.n || inIndex != used || len(c.free) != int(c.n)-used {
		t.Fatalf("step %d: %d slots used, %d indexed (%d counted), %d free of %d", step, used, inIndex, c.index.n, len(c.free), c.n)
	}
	for ref, ti := range c.topicAt {
		if c.topics[ti].ref != ref || c.topics[ti].n != perTopic[ti] || perTopic[ti] == 0 {
			t.Fatalf("step %d: topic %s at %d holds %d slots, counted %d", step, ref, ti, c.topics[ti].n, perTopic[ti])
		}
	}
	if len(c.topicAt) != len(perTopic) {
		t.Fatalf("step %d: %d topics indexed, %d in use: %v", step, len(c.topicAt), len(perTopic), slices.Collect(maps.Keys(c.topicAt)))
	}
}

// TestClientChunks checks the slot arithmetic across the chunk sizes:
// every slot handed out is its own, and chunks are only added.
func TestClientChunks(t *testing.T) {
	c := NewClient[string, int]()
	for i := range int32(3000) {
		if got := c.newSlot(); got != i {
			t.Fatalf("slot %d handed out as %d", i, got)
		}
		c.slot(i).partition = i
	}
	for i := range int32(3000) {
		if got := c.slot(i).partition; got != i {
			t.Fatalf("slot %d holds %d", i, got)
		}
	}
	total := 0
	for _, ch := range c.chunks {
		total += len(ch)
	}
	if total < 3000 || total >= 3000+chunkMax {
		t.Fatalf("chunks hold %d slots for 3000", total)
	}
}

// TestPartitionSize keeps a follower's Partition at 32 bytes: a
// follower's fetcher holds one per partition it follows, written or not.
func TestPartitionSize(t *testing.T) {
	type followerValue struct { // the replica fetcher's
		r     *int
		epoch int32
		gen   uint32
	}
	if n := unsafe.Sizeof(Partition[followerValue]{}); n > 32 {
		t.Fatalf("Partition is %d bytes, want at most 32", n)
	}
}

// TestClientBlankPartitionsHoldNoExt: partitions fetched at 0 with no
// last fetched epoch take no ext, whatever their leader epochs; the
// first fetch past 0 takes one, and deleting the partition lets it go.
func TestClientBlankPartitionsHoldNoExt(t *testing.T) {
	c := NewClient[string, int]()
	blank := func(epoch int32) PartitionData {
		return PartitionData{MaxBytes: 1 << 20, LeaderEpoch: epoch, LastFetchedEpoch: -1}
	}
	for p := range int32(100) {
		c.Want(Key[string]{"t", p}, blank(p%3))
	}
	c.Answered(c.Next(), 0, 1, nil)
	if len(c.exts) != 0 {
		t.Fatalf("%d exts for 100 never-written partitions", len(c.exts))
	}
	for p := range int32(100) {
		if d := c.Data(c.Get(Key[string]{"t", p})); d != blank(p%3) {
			t.Fatalf("partition %d asks %+v, want %+v", p, d, blank(p%3))
		}
	}
	d := blank(1)
	d.FetchOffset = 9
	c.Want(Key[string]{"t", 5}, d)
	if len(c.exts) != 1 || c.Data(c.Get(Key[string]{"t", 5})) != d {
		t.Fatalf("a fetch at 9: exts %d, data %+v", len(c.exts), c.Data(c.Get(Key[string]{"t", 5})))
	}
	c.Delete(Key[string]{"t", 5})
	c.Next() // forgets it
	if len(c.exts)-len(c.extsFree) != 0 {
		t.Fatalf("%d exts in use after the only extended partition went", len(c.exts)-len(c.extsFree))
	}
}
