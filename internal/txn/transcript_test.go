package txn

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTranscripts runs testdata/transcripts/*.txt: requests, write
// completions, marker outcomes, ticks and failovers in; the partition's
// answers, writes and marker requests out. Writes stay outstanding until
// an "append" command completes them, and committed records form the log
// a "failover" replays into a new Partition, as a new leader would.
// Rewrite expectations with -rewrite after a deliberate change and read
// the diff.
func TestTranscripts(t *testing.T) {
	datadriven.Walk(t, "testdata/transcripts", func(t *testing.T, path string) {
		h := newHarness(Config{})
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type harness struct {
	cfg     Config
	p       *Partition
	now     int64
	ids     *counterIDs
	log     []Record           // committed records, in order
	writes  []Write            // outstanding, in issue order
	markers map[string]Markers // outstanding, by transactional id
	nextRef Ref
	labels  map[Ref]string
}

type counterIDs struct {
	next int64
	err  error
}

func (c *counterIDs) NextID() (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.next++
	return c.next - 1, nil
}

func newHarness(cfg Config) *harness {
	h := &harness{ids: &counterIDs{next: 1000}, now: 1000, labels: map[Ref]string{}}
	h.reset(cfg)
	return h
}

func (h *harness) reset(cfg Config) {
	cfg.IDs = h.ids
	h.cfg = cfg
	h.p = NewPartition(cfg, 0, 0)
	h.log, h.writes, h.markers = nil, nil, map[string]Markers{}
}

func (h *harness) ref(label string) Ref {
	h.nextRef++
	h.labels[h.nextRef] = fmt.Sprintf("#%d %s", h.nextRef, label)
	return h.nextRef
}

func (h *harness) run(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	switch d.Cmd {
	case "config":
		var cfg Config
		if d.HasArg("max-timeout") {
			cfg.MaxTimeoutMs = int32(intArg(t, d, "max-timeout"))
		}
		if d.HasArg("expiration") {
			cfg.ExpirationMs = int64(intArg(t, d, "expiration"))
		}
		if d.HasArg("version") {
			cfg.Version = Version(intArg(t, d, "version"))
		}
		h.reset(cfg)
		c := h.p.cfg
		return fmt.Sprintf("max-timeout=%d expiration=%d version=%d", c.MaxTimeoutMs, c.ExpirationMs, c.Version)
	case "advance":
		h.now += int64(intArg(t, d, "ms"))
		return fmt.Sprintf("now=%d", h.now)
	case "ids":
		if d.HasArg("fail") {
			h.ids.err = kerrByName(t, strArg(d, "fail"))
		} else {
			h.ids.err = nil
		}
		if d.HasArg("next") {
			h.ids.next = int64(intArg(t, d, "next"))
		}
		return fmt.Sprintf("next=%d fail=%v", h.ids.next, h.ids.err)
	case "init":
		id := strArg(d, "txn")
		timeout := int32(60000)
		if d.HasArg("timeout") {
			timeout = int32(intArg(t, d, "timeout"))
		}
		var exp *ProducerIDEpoch
		if d.HasArg("pid") {
			exp = &ProducerIDEpoch{ProducerID: int64(intArg(t, d, "pid")), Epoch: int16(intArg(t, d, "epoch"))}
		}
		h.show(&out, h.p.InitProducerID(h.ref("init "+id), id, timeout, exp, h.now))
	case "add", "offsets":
		id := strArg(d, "txn")
		var parts []TopicPartition
		v := V0
		if d.Cmd == "offsets" {
			parts = []TopicPartition{{"__consumer_offsets", int32(intArg(t, d, "group-partition"))}}
		} else {
			parts = partsArg(t, strArg(d, "parts"))
			v = Version(intArgOr(t, d, "v", 0))
		}
		h.show(&out, h.p.AddPartitions(h.ref(d.Cmd+" "+id), id, pidArg(t, d), epochArg(t, d), parts, v, h.now))
	case "verify":
		id := strArg(d, "txn")
		parts := partsArg(t, strArg(d, "parts"))
		codes := h.p.Verify(id, pidArg(t, d), epochArg(t, d), parts)
		for i, tp := range parts {
			fmt.Fprintf(&out, "%s: %s\n", tp, codeName(codes[i]))
		}
	case "end":
		id := strArg(d, "txn")
		commit := d.HasArg("commit")
		if !commit && !d.HasArg("abort") {
			t.Fatalf("%s: end needs commit or abort", d.Pos)
		}
		what := "abort"
		if commit {
			what = "commit"
		}
		v := Version(intArgOr(t, d, "v", 0))
		h.show(&out, h.p.EndTxn(h.ref("end "+what+" "+id), id, pidArg(t, d), epochArg(t, d), commit, v, h.now))
	case "append":
		h.append(t, d, &out)
	case "markers":
		h.markersDone(t, d, &out)
	case "abort-timed-out":
		h.show(&out, h.p.AbortTimedOut(h.now))
	case "expire":
		h.show(&out, h.p.Expire(h.now))
	case "describe":
		id := strArg(d, "txn")
		ds := h.p.Describe(id)
		if ds.Code != 0 {
			return codeName(ds.Code)
		}
		return fmt.Sprintf("%s pid=%d epoch=%d timeout=%d start=%d parts=%v",
			ds.State, ds.ProducerID, ds.ProducerEpoch, ds.TimeoutMs, ds.StartMs, ds.Partitions)
	case "list":
		f := ListFilter{MinDurationMs: -1}
		if d.HasArg("states") {
			for _, s := range strings.Split(strArg(d, "states"), ",") {
				st, ok := StateByName(s)
				if !ok {
					t.Fatalf("%s: unknown state %q", d.Pos, s)
				}
				f.States = append(f.States, st)
			}
		}
		if d.HasArg("pids") {
			for _, s := range strings.Split(strArg(d, "pids"), ",") {
				n, _ := strconv.ParseInt(s, 10, 64)
				f.ProducerIDs = append(f.ProducerIDs, n)
			}
		}
		if d.HasArg("duration") {
			f.MinDurationMs = int64(intArg(t, d, "duration"))
		}
		if d.HasArg("pattern") {
			re, err := CompilePattern(strArg(d, "pattern"))
			if err != nil {
				return "error: " + err.Error()
			}
			f.Pattern = re
		}
		for _, l := range h.p.List(f, h.now) {
			fmt.Fprintf(&out, "%s pid=%d %s\n", l.TransactionalID, l.ProducerID, l.State)
		}
		if out.Len() == 0 {
			return "(none)"
		}
	case "dump":
		for _, id := range h.p.sortedIDs() {
			fmt.Fprintln(&out, dumpTxn(h.p.txns[id]))
		}
		if out.Len() == 0 {
			return "(none)"
		}
	case "log":
		for i, r := range h.log {
			fmt.Fprintf(&out, "%d: %s\n", i, recordString(r))
		}
		if out.Len() == 0 {
			return "(empty)"
		}
	case "seed":
		// A record as a Kafka broker may have left it, written straight
		// to the log (loaded by the next failover).
		v := Value{
			Version: 1, ProducerID: int64(intArg(t, d, "pid")), ProducerEpoch: int16(intArg(t, d, "epoch")),
			PrevProducerID: -1, NextProducerID: -1, NextProducerEpoch: -1,
			TimeoutMs: int32(intArgOr(t, d, "timeout", 60000)), LastUpdateMs: h.now, StartMs: -1,
			ClientVersion: int16(intArgOr(t, d, "v", 0)),
		}
		st, ok := StateByName(strArg(d, "state"))
		if !ok {
			t.Fatalf("%s: bad state", d.Pos)
		}
		v.Status = st
		if st != Empty {
			v.StartMs = h.now
			v.Partitions = groupPartitions(toSet(partsArg(t, strArg(d, "parts"))))
		}
		rec := Record{Key: EncodeKey(strArg(d, "txn")), Value: EncodeValue(&v)}
		h.log = append(h.log, rec)
		return recordString(rec)
	case "failover":
		// A new leader: the state is rebuilt from the committed log;
		// writes and markers in flight died with the old leader.
		epoch := h.p.epoch + 1
		h.p = NewPartition(h.cfg, 0, epoch)
		h.writes, h.markers = nil, map[string]Markers{}
		for _, r := range h.log {
			if err := h.p.Replay(r.Key, r.Value); err != nil {
				fmt.Fprintf(&out, "replay: %v\n", err)
			}
		}
		fmt.Fprintf(&out, "loaded %d transactional ids at coordinator epoch %d\n", h.p.Len(), epoch)
		h.show(&out, h.p.Loaded(h.now))
	default:
		t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	s := strings.TrimRight(out.String(), "\n")
	if s == "" {
		return "ok"
	}
	return s
}

// show prints an output and keeps its writes and markers outstanding.
func (h *harness) show(out *strings.Builder, o Output) {
	for _, a := range o.Answers {
		label := h.labels[a.Ref]
		if a.Code != 0 {
			fmt.Fprintf(out, "%s: %s\n", label, codeName(a.Code))
			continue
		}
		if a.ProducerID == NoProducerID && a.ProducerEpoch == NoProducerEpoch {
			fmt.Fprintf(out, "%s: NONE\n", label)
			continue
		}
		fmt.Fprintf(out, "%s: NONE pid=%d epoch=%d\n", label, a.ProducerID, a.ProducerEpoch)
	}
	for _, w := range o.Writes {
		h.writes = append(h.writes, w)
		retry := ""
		if w.Retry {
			retry = " (retry)"
		}
		for _, r := range w.Records {
			fmt.Fprintf(out, "write w%d%s: %s\n", w.ID, retry, recordString(r))
		}
	}
	for _, m := range o.Markers {
		h.markers[m.TransactionalID] = m
		fmt.Fprintf(out, "%s\n", markersString(m))
	}
	for _, ev := range o.Events {
		fmt.Fprintf(out, "event %s %s pid=%d epoch=%d\n", ev.Kind, ev.TransactionalID, ev.ProducerID, ev.ProducerEpoch)
	}
}

// append completes outstanding writes: the one named by id, or all of
// them in order. err fails them with that error code instead.
func (h *harness) append(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	code := int16(0)
	if d.HasArg("err") {
		code = kerrByName(t, strArg(d, "err")).Code
	}
	var todo []Write
	if d.HasArg("w") {
		id := uint64(intArg(t, d, "w"))
		i := slices.IndexFunc(h.writes, func(w Write) bool { return w.ID == id })
		if i < 0 {
			t.Fatalf("%s: no outstanding write w%d", d.Pos, id)
		}
		todo = []Write{h.writes[i]}
		h.writes = slices.Delete(h.writes, i, i+1)
	} else {
		todo, h.writes = h.writes, nil
	}
	for _, w := range todo {
		if code == 0 {
			h.log = append(h.log, w.Records...)
		}
		fmt.Fprintf(out, "appended w%d: %s\n", w.ID, codeName(code))
		h.show(out, h.p.Appended(w.ID, code, h.now))
	}
}

// markersDone reports the outcome of a transaction's outstanding markers:
// NONE for every partition unless named (a-0=NOT_LEADER_OR_FOLLOWER, or
// a-0=deleted).
func (h *harness) markersDone(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	id := strArg(d, "txn")
	m, ok := h.markers[id]
	if !ok {
		t.Fatalf("%s: no outstanding markers for %s", d.Pos, id)
	}
	delete(h.markers, id)
	var res []MarkerResult
	for _, tp := range m.Partitions {
		r := MarkerResult{Partition: tp}
		if d.HasArg(tp.String()) {
			s := strArg(d, tp.String())
			if s == "deleted" {
				r.Deleted = true
			} else {
				r.Code = kerrByName(t, s).Code
			}
		}
		res = append(res, r)
	}
	if d.HasArg("extra") {
		// An outcome for a partition the markers did not name.
		for _, tp := range partsArg(t, strArg(d, "extra")) {
			res = append(res, MarkerResult{Partition: tp})
		}
	}
	if d.HasArg("as-pid") {
		// Outcomes of an older round of markers.
		m.ProducerID = int64(intArg(t, d, "as-pid"))
	}
	h.show(out, h.p.MarkersWritten(id, m.ProducerID, m.ProducerEpoch, m.Commit, res, h.now))
}

func recordString(r Record) string {
	id, err := DecodeKey(r.Key)
	if err != nil {
		return "bad key: " + err.Error()
	}
	if r.Value == nil {
		return id + " tombstone"
	}
	v, err := DecodeValue(r.Value)
	if err != nil {
		return id + " bad value: " + err.Error()
	}
	var parts []string
	for _, tp := range v.Partitions {
		for _, p := range tp.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
		}
	}
	s := fmt.Sprintf("%s %s pid=%d epoch=%d", id, v.Status, v.ProducerID, v.ProducerEpoch)
	if v.PrevProducerID != -1 {
		s += fmt.Sprintf(" prev=%d", v.PrevProducerID)
	}
	if v.NextProducerID != -1 {
		s += fmt.Sprintf(" next=%d", v.NextProducerID)
	}
	return s + fmt.Sprintf(" timeout=%d parts=%v start=%d update=%d tv=%d",
		v.TimeoutMs, parts, v.StartMs, v.LastUpdateMs, v.ClientVersion)
}

func markersString(m Markers) string {
	what := "ABORT"
	if m.Commit {
		what = "COMMIT"
	}
	retry := ""
	if m.Retry {
		retry = " (retry)"
	}
	return fmt.Sprintf("markers %s%s: %s pid=%d epoch=%d coordinator-epoch=%d tv=%d %v",
		m.TransactionalID, retry, what, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Version, m.Partitions)
}

func dumpTxn(t *txn) string {
	s := fmt.Sprintf("%s %s pid=%d prev=%d next=%d epoch=%d last-epoch=%d timeout=%d parts=%v start=%d update=%d tv=%d",
		t.id, t.state, t.producerID, t.prevProducerID, t.nextProducerID, t.epoch, t.lastEpoch,
		t.timeoutMs, t.parts.sorted(), t.startMs, t.updateMs, t.version)
	if t.pending != noState {
		s += " pending=" + t.pending.String()
	}
	if t.failedFence {
		s += " failed-fence"
	}
	if t.markers != nil {
		s += " sending-markers"
	}
	return s
}

// kafkaNames are the names Kafka uses today where kerr keeps an older one.
var kafkaNames = map[int16]string{kerr.NotLeaderForPartition.Code: "NOT_LEADER_OR_FOLLOWER"}

func codeName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	if n, ok := kafkaNames[code]; ok {
		return n
	}
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return ke.Message
		}
	}
	return fmt.Sprintf("code %d", code)
}

func kerrByName(t *testing.T, name string) *kerr.Error {
	for c := int16(-1); c < 200; c++ {
		var ke *kerr.Error
		if errors.As(kerr.ErrorForCode(c), &ke) && codeName(c) == name {
			return ke
		}
	}
	t.Fatalf("unknown error %q", name)
	return nil
}

func strArg(d *datadriven.TestData, key string) string {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			if len(a.Vals) == 0 {
				return ""
			}
			return strings.Join(a.Vals, ",")
		}
	}
	return ""
}

func intArg(t *testing.T, d *datadriven.TestData, key string) int {
	if !d.HasArg(key) {
		t.Fatalf("%s: missing %s=", d.Pos, key)
	}
	n, err := strconv.Atoi(strArg(d, key))
	if err != nil {
		t.Fatalf("%s: %s: %v", d.Pos, key, err)
	}
	return n
}

func intArgOr(t *testing.T, d *datadriven.TestData, key string, def int) int {
	if !d.HasArg(key) {
		return def
	}
	return intArg(t, d, key)
}

func pidArg(t *testing.T, d *datadriven.TestData) int64 { return int64(intArg(t, d, "pid")) }

func epochArg(t *testing.T, d *datadriven.TestData) int16 { return int16(intArg(t, d, "epoch")) }

// partsArg parses a-0,b-1 (the topic is everything before the last dash).
func partsArg(t *testing.T, s string) []TopicPartition {
	var out []TopicPartition
	for _, p := range strings.Split(s, ",") {
		if p == "" {
			continue
		}
		i := strings.LastIndexByte(p, '-')
		n, err := strconv.Atoi(p[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad partition %q", p)
		}
		out = append(out, TopicPartition{p[:i], int32(n)})
	}
	return out
}
