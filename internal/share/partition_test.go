package share

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var testStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// logSim is the log a share partition reads: record batches and a high
// watermark.
type logSim struct {
	batches []Batch
	end     int64 // next offset to assign
	hwm     int64
	start   int64 // log start offset
}

// read returns the batches a read from off returns: the batch holding off
// or the first one after it, and at most max batches (0: all).
func (l *logSim) read(off int64, max int) []Batch {
	var out []Batch
	for _, b := range l.batches {
		if b.Last < off || b.Last < l.start {
			continue
		}
		out = append(out, b)
		if max > 0 && len(out) == max {
			break
		}
	}
	return out
}

// partHarness drives one Partition for the transcripts: a simulated log,
// a clock, and a store of encoded state records.
type partHarness struct {
	p     *Partition
	cfg   Config
	log   logSim
	now   time.Time
	store [][]byte // encoded state records, in write order
}

func newPartHarness() *partHarness {
	return &partHarness{now: testStart}
}

// persist encodes rec (if it is not empty) and keeps it; it returns a line
// describing it.
func (h *partHarness) persist(t *testing.T, rec StateRecord) string {
	t.Helper()
	if rec.IsZero() {
		return ""
	}
	b, err := rec.AppendTo(nil)
	if err != nil {
		t.Fatalf("encoding %+v: %v", rec, err)
	}
	h.store = append(h.store, b)
	return "durable: " + formatRecord(rec)
}

func formatRecord(rec StateRecord) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s epoch=%d spso=%d", rec.Kind, rec.StateEpoch, rec.StartOffset)
	for _, b := range rec.Batches {
		fmt.Fprintf(&sb, " %d-%d:%s", b.First, b.Last, b.State)
		if b.State != Acknowledged {
			fmt.Fprintf(&sb, "x%d", b.DeliveryCount)
		}
	}
	return sb.String()
}

func (h *partHarness) state() string {
	p := h.p
	var sb strings.Builder
	fmt.Fprintf(&sb, "spso=%d speo=%d in-flight=%d next-fetch=%d", p.StartOffset(), p.EndOffset(), p.InFlight(), p.NextFetchOffset(h.now))
	for _, r := range p.runs {
		fmt.Fprintf(&sb, "\n  %d-%d %s", r.first, r.last, r.state)
		switch r.state {
		case Acquired:
			fmt.Fprintf(&sb, " by %s x%d until +%s", r.member, r.count, time.Unix(0, r.deadline).Sub(h.now))
		case Available, Archived:
			fmt.Fprintf(&sb, " x%d", r.count)
		}
	}
	return sb.String()
}

func formatRanges(rs []AcquiredRange) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%d-%d(x%d)", r.First, r.Last, r.DeliveryCount)
	}
	return strings.Join(parts, " ")
}

func formatErr(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return "error " + ke.Message + " (" + strings.TrimSuffix(err.Error(), ": "+ke.Error()) + ")"
	}
	return "error: " + err.Error()
}

func parseRange(s string) (int64, int64, error) {
	a, b, ok := strings.Cut(s, "-")
	first, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return first, first, nil
	}
	last, err := strconv.ParseInt(b, 10, 64)
	return first, last, err
}

var ackNames = map[string]AckType{"gap": AckGap, "accept": AckAccept, "release": AckRelease, "reject": AckReject, "renew": AckRenew}

// parseAck parses "first-last:type[,type...]"; a type may be a name or
// the wire number.
func parseAck(s string) (AckBatch, error) {
	rng, types, ok := strings.Cut(s, ":")
	if !ok {
		return AckBatch{}, fmt.Errorf("ack %q: want range:type", s)
	}
	first, last, err := parseRange(rng)
	if err != nil {
		return AckBatch{}, err
	}
	b := AckBatch{First: first, Last: last}
	for _, name := range strings.Split(types, ",") {
		if t, ok := ackNames[name]; ok {
			b.Types = append(b.Types, t)
			continue
		}
		n, err := strconv.Atoi(name)
		if err != nil {
			return AckBatch{}, fmt.Errorf("ack type %q", name)
		}
		b.Types = append(b.Types, AckType(n))
	}
	return b, nil
}

func mustInt(t *testing.T, c *tcase, key string, def int64) int64 {
	t.Helper()
	v, err := strconv.ParseInt(c.arg(key, strconv.FormatInt(def, 10)), 10, 64)
	if err != nil {
		t.Fatalf("line %d: %s: %v", c.line, key, err)
	}
	return v
}

func mustDuration(t *testing.T, c *tcase, key string, def time.Duration) time.Duration {
	t.Helper()
	s := c.arg(key, "")
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("line %d: %s: %v", c.line, key, err)
	}
	return d
}

func (h *partHarness) do(t *testing.T, c *tcase) string {
	switch c.cmd {
	case "init":
		h.cfg = Config{
			LockDuration:       mustDuration(t, c, "lock", 0),
			DeliveryCountLimit: int16(mustInt(t, c, "limit", 0)),
			MaxRecordLocks:     int32(mustInt(t, c, "locks", 0)),
		}
		h.p = New(h.cfg, mustInt(t, c, "start", 0))
		h.log, h.store = logSim{}, nil
		return strings.Join(nonEmpty(h.persist(t, h.p.Snapshot()), h.state()), "\n")

	case "produce":
		// Tokens: N appends a batch of N records, gap:N skips N offsets
		// (compacted away), skip:N appends an aborted batch of N.
		for _, tok := range c.bare() {
			kind, num, ok := strings.Cut(tok, ":")
			if !ok {
				kind, num = "batch", tok
			}
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n <= 0 {
				t.Fatalf("line %d: produce %q", c.line, tok)
			}
			switch kind {
			case "batch", "skip":
				h.log.batches = append(h.log.batches, Batch{Base: h.log.end, Last: h.log.end + n - 1, Skip: kind == "skip"})
			case "gap":
			default:
				t.Fatalf("line %d: produce %q", c.line, tok)
			}
			h.log.end += n
		}
		h.log.hwm = mustInt(t, c, "hwm", h.log.end)
		var parts []string
		for _, b := range h.log.batches {
			s := fmt.Sprintf("%d-%d", b.Base, b.Last)
			if b.Skip {
				s = "skip:" + s
			}
			parts = append(parts, s)
		}
		return fmt.Sprintf("log %s hwm=%d", strings.Join(parts, " "), h.log.hwm)

	case "compact":
		// Remove the batches lying inside a range, as compaction does.
		first, last, err := parseRange(c.bare()[0])
		if err != nil {
			t.Fatalf("line %d: %v", c.line, err)
		}
		kept := h.log.batches[:0]
		for _, b := range h.log.batches {
			if b.Base < first || b.Last > last {
				kept = append(kept, b)
			}
		}
		h.log.batches = kept
		return fmt.Sprintf("log %d batches", len(h.log.batches))

	case "acquire":
		mode := BatchOptimized
		if c.arg("mode", "batch") == "record" {
			mode = RecordLimit
		}
		fetch := h.p.NextFetchOffset(h.now)
		req := AcquireRequest{
			Member:        c.arg("member", "A"),
			FetchOffset:   fetch,
			Batches:       h.log.read(fetch, int(mustInt(t, c, "read", 0))),
			HighWatermark: h.log.hwm,
			MaxRecords:    int32(mustInt(t, c, "max", 500)),
			BatchSize:     int32(mustInt(t, c, "batch", 500)),
			Mode:          mode,
		}
		res, err := h.p.Acquire(req, h.now)
		if err != nil {
			return formatErr(err)
		}
		return strings.Join(nonEmpty(
			fmt.Sprintf("acquired %s (%d records)", formatRanges(res.Acquired), res.Records),
			h.persist(t, res.Change), h.state()), "\n")

	case "ack":
		var batches []AckBatch
		for _, s := range c.bare() {
			b, err := parseAck(s)
			if err != nil {
				t.Fatalf("line %d: %v", c.line, err)
			}
			batches = append(batches, b)
		}
		rec, err := h.p.Acknowledge(c.arg("member", "A"), batches, h.now)
		if err != nil {
			return strings.Join([]string{formatErr(err), h.state()}, "\n")
		}
		return strings.Join(nonEmpty(h.persist(t, rec), h.state()), "\n")

	case "time":
		d, err := time.ParseDuration(strings.TrimPrefix(c.bare()[0], "+"))
		if err != nil {
			t.Fatalf("line %d: %v", c.line, err)
		}
		h.now = h.now.Add(d)
		if next, ok := h.p.NextDeadline(); ok {
			return fmt.Sprintf("now +%s, next lock deadline in %s", h.now.Sub(testStart), next.Sub(h.now))
		}
		return fmt.Sprintf("now +%s", h.now.Sub(testStart))

	case "expire":
		return strings.Join(nonEmpty(h.persist(t, h.p.Expire(h.now)), h.state()), "\n")

	case "leave":
		return strings.Join(nonEmpty(h.persist(t, h.p.ReleaseMember(c.arg("member", "A"), h.now)), h.state()), "\n")

	case "logstart":
		h.log.start = mustInt(t, c, "offset", 0)
		return strings.Join(nonEmpty(h.persist(t, h.p.AdvanceLogStart(h.log.start)), h.state()), "\n")

	case "reset":
		return strings.Join(nonEmpty(h.persist(t, h.p.Reset(mustInt(t, c, "start", 0))), h.state()), "\n")

	case "snapshot":
		return h.persist(t, h.p.Snapshot())

	case "state":
		return h.state()

	case "config":
		h.cfg = Config{
			LockDuration:       mustDuration(t, c, "lock", 0),
			DeliveryCountLimit: int16(mustInt(t, c, "limit", 0)),
			MaxRecordLocks:     int32(mustInt(t, c, "locks", 0)),
		}
		h.p.SetConfig(h.cfg)
		cfg := h.p.Config()
		return fmt.Sprintf("lock=%s limit=%d locks=%d", cfg.LockDuration, cfg.DeliveryCountLimit, cfg.MaxRecordLocks)

	case "can-acquire":
		return fmt.Sprint(h.p.CanAcquire(h.now))

	case "stats":
		s := h.p.Stats()
		return fmt.Sprintf("in-flight=%d acquired=%d available=%d lag=%d\nacquired-total=%d redeliveries=%d acknowledged=%d released=%d rejected=%d archived=%d lock-expiries=%d renewed=%d",
			s.InFlight, s.Acquired, s.Available, h.p.Lag(h.log.hwm), s.AcquiredTotal, s.Redeliveries, s.AcknowledgedTotal, s.ReleasedTotal, s.RejectedTotal, s.ArchivedTotal, s.LockExpiries, s.RenewedTotal)

	case "restart":
		// Decode every stored record and rebuild, as a broker does after a
		// crash or on becoming leader.
		recs := make([]StateRecord, len(h.store))
		for i, b := range h.store {
			r, err := DecodeStateRecord(b)
			if err != nil {
				t.Fatalf("line %d: record %d: %v", c.line, i, err)
			}
			recs[i] = r
		}
		p, err := Restore(h.cfg, recs)
		if err != nil {
			return formatErr(err)
		}
		h.p = p
		return fmt.Sprintf("restored from %d records\n%s", len(recs), h.state())
	}
	t.Fatalf("line %d: unknown command %q", c.line, c.cmd)
	return ""
}

func nonEmpty(parts ...string) []string {
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

func TestPartitionTranscripts(t *testing.T) {
	transcripts(t, "partition_*.txt", func(t *testing.T) func(t *testing.T, c *tcase) string {
		h := newPartHarness()
		return h.do
	})
}
