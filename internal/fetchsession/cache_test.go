package fetchsession

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakePartition is a broker partition for the transcripts: its state
// decides what a read finds, and it keeps the marks of the sessions
// watching it.
type fakePartition struct {
	name     string
	hw       int64
	logStart int64
	err      int16
	src      Source
}

// read is what a fetch of p at d finds: every offset below the high
// watermark past the fetch offset is 10 bytes, cut at MaxBytes (then
// More is set); MaxBytes 0 stands for a request whose budget ran out
// before the partition.
func (p *fakePartition) read(d PartitionData) Outcome {
	o := Outcome{HighWatermark: p.hw, LogStartOffset: p.logStart, ErrorCode: p.err}
	if p.err != 0 {
		o.HighWatermark, o.LogStartOffset = -1, -1
		return o
	}
	if n := p.hw - d.FetchOffset; n > 0 {
		if d.MaxBytes == 0 {
			// The request's budget ran out before this partition.
			o.More = true
			return o
		}
		o.Bytes = 10 * n
		if d.MaxBytes > 0 && o.Bytes > int64(d.MaxBytes) {
			o.Bytes, o.More = int64(d.MaxBytes)/10*10, true
		}
	}
	return o
}

type transcript struct {
	cache    *Cache
	now      time.Time
	parts    map[string]*fakePartition // "topic:partition"
	fetches  map[string]*openFetch
	sessions map[string]int32 // client name -> its session id
	epochs   map[string]int32 // client name -> its next epoch
}

type openFetch struct {
	f        *Fetch
	outcomes map[int32]Outcome
	version  int16
	// racing are applied once, between the first reads and their Bind.
	racing []racingChange
}

// racingChange sets a partition's high watermark, marking its watchers.
type racingChange struct {
	p  *fakePartition
	hw int64
}

func (c racingChange) apply() {
	c.p.hw = c.hw
	c.p.src.MarkAll()
}

// TestCacheTranscripts drives the session cache through the transcripts
// in testdata/cache/*.txt. Commands:
//
//	cache slots=N [age=120s]
//	partition t:p [hw=N] [ls=N] [err=CODE]     set a partition (marks its watchers when it changes)
//	fetch c=NAME [id=N epoch=N | session] [follower[=ID]] [v=17] [parts=(t:p@off[/max],...)] [forget=(t:p,...)] [ready] [racing=(t:p=hw,...)]
//	                   admit a request; session: the id and next epoch the client got last;
//	                   ready: its first reads are enough to answer, it does not park;
//	                   racing=(t:p=hw,...): set after its first reads, before they are bound
//	read c=NAME        read what is pending now (a park woken, or the first read)
//	finish c=NAME      answer
//	advance d=DUR
//	sessions           the cached sessions
//	stats
//
// fetch prints the kind (or the error) and the first reads; read prints
// the reads; finish prints the answer's session id, error and
// partitions.
func TestCacheTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/cache", func(t *testing.T, path string) {
		tr := &transcript{now: time.Unix(1_000_000, 0)}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return tr.run(t, d)
		})
	})
}

func (tr *transcript) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "cache":
		var slots int
		d.ScanArgs(t, "slots", &slots)
		cfg := Config{Slots: slots}
		if arg, ok := d.Arg("age"); ok {
			cfg.EvictionAge = mustDuration(t, arg.Vals[0])
		}
		next := int32(0)
		cfg.NewID = func() int32 { next++; return next }
		tr.cache = NewCache(cfg)
		tr.parts = map[string]*fakePartition{}
		tr.fetches = map[string]*openFetch{}
		tr.sessions = map[string]int32{}
		tr.epochs = map[string]int32{}
		return ""
	case "partition":
		name := d.CmdArgs[0].Key
		p := tr.part(name)
		before := struct {
			hw, logStart int64
			err          int16
		}{p.hw, p.logStart, p.err}
		for _, a := range d.CmdArgs[1:] {
			v, err := strconv.ParseInt(a.Vals[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", a.Key, err)
			}
			switch a.Key {
			case "hw":
				p.hw = v
			case "ls":
				p.logStart = v
			case "err":
				p.err = int16(v)
			default:
				t.Fatalf("unknown partition arg %s", a.Key)
			}
		}
		if p.hw != before.hw || p.logStart != before.logStart || p.err != before.err {
			p.src.MarkAll()
		}
		return fmt.Sprintf("%s watched by %d", name, len(p.src.Marks()))
	case "fetch":
		return tr.fetch(t, d)
	case "read":
		of := tr.open(t, d)
		return tr.read(of)
	case "finish":
		of := tr.open(t, d)
		var name string
		d.ScanArgs(t, "c", &name)
		delete(tr.fetches, name)
		res := of.f.Finish(tr.now, func(i int32) Outcome { return of.outcomes[i] })
		var b strings.Builder
		fmt.Fprintf(&b, "session=%d", res.SessionID)
		if res.ErrorCode != 0 {
			fmt.Fprintf(&b, " error=%s", kerr.ErrorForCode(res.ErrorCode).(*kerr.Error).Message)
		}
		var ps []string
		for _, in := range res.Include {
			o := of.outcomes[in.Index]
			s := fmt.Sprintf("%s hw=%d", key(in.Topic, in.Partition), o.HighWatermark)
			if o.Bytes > 0 {
				s += fmt.Sprintf(" bytes=%d", o.Bytes)
			}
			if o.ErrorCode != 0 {
				s += " err=" + strconv.Itoa(int(o.ErrorCode))
			}
			ps = append(ps, s)
		}
		fmt.Fprintf(&b, " answers=%d\n", len(ps))
		for _, s := range ps {
			b.WriteString("  " + s + "\n")
		}
		if res.ErrorCode == 0 {
			if res.SessionID != InvalidID && of.f.Kind() == Full {
				tr.sessions[name], tr.epochs[name] = res.SessionID, 1
			} else if res.SessionID != InvalidID {
				tr.epochs[name] = NextEpoch(tr.epochs[name])
			} else {
				tr.sessions[name], tr.epochs[name] = 0, 0
			}
		}
		return b.String()
	case "advance":
		var ds string
		d.ScanArgs(t, "d", &ds)
		tr.now = tr.now.Add(mustDuration(t, ds))
		return ""
	case "sessions":
		c := tr.cache
		c.mu.Lock()
		defer c.mu.Unlock()
		var ids []int32
		for id := range c.sessions {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var b strings.Builder
		for _, id := range ids {
			s := c.sessions[id]
			s.mu.Lock()
			fmt.Fprintf(&b, "id=%d privileged=%t size=%d epoch=%d idle=%s age=%s\n", id, s.privileged, s.size, s.epoch, tr.now.Sub(s.lastUsed), tr.now.Sub(s.created))
			s.mu.Unlock()
		}
		fmt.Fprintf(&b, "partitions=%d", c.partitions)
		return b.String()
	case "stats":
		st := tr.cache.Stats()
		var b strings.Builder
		fmt.Fprintf(&b, "sessions=%d partitions=%d evictions=%d\n", st.Sessions, st.Partitions, st.Evictions)
		for k := range kinds {
			fmt.Fprintf(&b, "%s: requests=%d named=%d read=%d answered=%d\n", k, st.Requests[k], st.Requested[k], st.Read[k], st.Answered[k])
		}
		return b.String()
	}
	t.Fatalf("unknown command %s", d.Cmd)
	return ""
}

func (tr *transcript) part(name string) *fakePartition {
	p := tr.parts[name]
	if p == nil {
		p = &fakePartition{name: name}
		tr.parts[name] = p
	}
	return p
}

func (tr *transcript) open(t *testing.T, d *datadriven.TestData) *openFetch {
	var name string
	d.ScanArgs(t, "c", &name)
	of := tr.fetches[name]
	if of == nil {
		t.Fatalf("no open fetch for %s", name)
	}
	return of
}

func (tr *transcript) fetch(t *testing.T, d *datadriven.TestData) string {
	var name string
	d.ScanArgs(t, "c", &name)
	r := kmsg.NewPtrFetchRequest()
	r.Version = 17
	if d.HasArg("v") {
		var v int
		d.ScanArgs(t, "v", &v)
		r.Version = int16(v)
	}
	if d.HasArg("session") {
		r.SessionID, r.SessionEpoch = tr.sessions[name], tr.epochs[name]
	} else {
		var id, epoch int
		d.ScanArgs(t, "id", &id)
		d.ScanArgs(t, "epoch", &epoch)
		r.SessionID, r.SessionEpoch = int32(id), int32(epoch)
	}
	if arg, ok := d.Arg("parts"); ok {
		for _, v := range arg.Vals {
			tp, off, _ := strings.Cut(v, "@")
			off, maxS, _ := strings.Cut(off, "/")
			topic, p := splitTP(t, tp)
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = p
			rp.FetchOffset, _ = strconv.ParseInt(off, 10, 64)
			rp.PartitionMaxBytes = 1 << 20
			if maxS != "" {
				m, _ := strconv.Atoi(maxS)
				rp.PartitionMaxBytes = int32(m)
			}
			rt := topicOf(r, topic)
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	if arg, ok := d.Arg("forget"); ok {
		for _, v := range arg.Vals {
			topic, p := splitTP(t, v)
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = topic, idOf(topic)
			ft.Partitions = []int32{p}
			r.ForgottenTopics = append(r.ForgottenTopics, ft)
		}
	}
	replica := int32(-1)
	if d.HasArg("follower") {
		replica = 2
		if arg, _ := d.Arg("follower"); len(arg.Vals) > 0 {
			n, _ := strconv.Atoi(arg.Vals[0])
			replica = int32(n)
		}
	}
	f, code := tr.cache.Begin(r, replica, tr.now)
	if code != 0 {
		return "error=" + kerr.ErrorForCode(code).(*kerr.Error).Message
	}
	of := &openFetch{f: f, outcomes: map[int32]Outcome{}, version: r.Version}
	tr.fetches[name] = of
	if arg, ok := d.Arg("racing"); ok {
		// Changes that land while the broker reads, before it binds
		// the reads to their partitions.
		for _, v := range arg.Vals {
			tp, hw, _ := strings.Cut(v, "=")
			n, err := strconv.ParseInt(hw, 10, 64)
			if err != nil {
				t.Fatalf("racing %q: want t:p=hw", v)
			}
			of.racing = append(of.racing, racingChange{tr.part(tp), n})
		}
	}
	if d.HasArg("ready") {
		// Enough to answer at once: the broker reads and does not park.
		return fmt.Sprintf("kind=%s\nreads=%s", f.Kind(), tr.readPending(of))
	}
	return fmt.Sprintf("kind=%s\n%s", f.Kind(), tr.read(of))
}

// read reads what is pending, as the broker does, binding each read to
// its partition.
func (tr *transcript) read(of *openFetch) string {
	out := "reads=" + tr.readPending(of)
	// A request that reads may park: its partitions are watched from now
	// on, and the broker reads at once what the watch queued again (what
	// was read before the session watched it).
	of.f.Wait()
	if again := tr.readPending(of); again != "" {
		out += "\nreread=" + again
	}
	return out
}

// readPending reads what the fetch hands out now, as the broker does.
func (tr *transcript) readPending(of *openFetch) string {
	reads := of.f.Pending(nil)
	var names []string
	for i := range reads {
		r := &reads[i]
		name := r.Topic.Name + ":" + strconv.Itoa(int(r.Partition))
		if r.Topic.Name == "" {
			name = nameOf(r.Topic.ID) + ":" + strconv.Itoa(int(r.Partition))
		}
		p := tr.part(name)
		r.Src = &p.src
		of.outcomes[r.Index] = p.read(r.PartitionData)
		names = append(names, fmt.Sprintf("%s@%d", name, r.FetchOffset))
	}
	for _, c := range of.racing {
		c.apply()
	}
	of.racing = nil
	of.f.Bind(reads)
	return strings.Join(names, " ")
}

func key(ref TopicRef, p int32) string {
	if ref.Name != "" {
		return ref.Name + ":" + strconv.Itoa(int(p))
	}
	return nameOf(ref.ID) + ":" + strconv.Itoa(int(p))
}

func splitTP(t *testing.T, s string) (string, int32) {
	topic, ps, ok := strings.Cut(s, ":")
	if !ok {
		t.Fatalf("partition %q is not topic:partition", s)
	}
	p, err := strconv.Atoi(ps)
	if err != nil {
		t.Fatalf("partition %q: %v", s, err)
	}
	return topic, int32(p)
}

// idOf and nameOf map short topic names to topic ids for the v13+
// requests of the transcripts.
func idOf(name string) [16]byte {
	var id [16]byte
	copy(id[:], name)
	return id
}

func nameOf(id [16]byte) string { return strings.TrimRight(string(id[:]), "\x00") }

func topicOf(r *kmsg.FetchRequest, name string) *kmsg.FetchRequestTopic {
	for i := range r.Topics {
		if r.Topics[i].Topic == name {
			return &r.Topics[i]
		}
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = name, idOf(name)
	r.Topics = append(r.Topics, rt)
	return &r.Topics[len(r.Topics)-1]
}

func mustDuration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func testTime() time.Time { return time.Unix(1_000_000, 0) }
