package chaos

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ack is one record a producer had acknowledged: where the broker said
// it stored it and when the acknowledgement arrived.
type Ack struct {
	Client    string // client family: "kgo" or "java"
	Value     string // unique: producer id, '-', sequence
	Partition int32
	Offset    int64
	At        time.Time
}

// Rec is one record a consumer read.
type Rec struct {
	Partition int32
	Offset    int64
	Value     string
}

// Ledger collects, from several goroutines, what producers had
// acknowledged, which sends failed (their records may or may not be in
// the log) and what the consumer running during the faults read.
type Ledger struct {
	mu      sync.Mutex
	acks    []Ack
	failed  map[string]bool
	reasons map[string]int // "producer: reason" -> failed sends
	seen    []Rec
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{failed: map[string]bool{}, reasons: map[string]int{}} }

// Acked records an acknowledged record.
func (l *Ledger) Acked(a Ack) {
	l.mu.Lock()
	l.acks = append(l.acks, a)
	l.mu.Unlock()
}

// Failed records a send whose outcome is unknown: the producer gave up,
// for reason (the client's error).
func (l *Ledger) Failed(value, reason string) {
	prod, _ := splitValue(value)
	l.mu.Lock()
	l.failed[value] = true
	l.reasons[prod+": "+reason]++
	l.mu.Unlock()
}

// FailureReasons lists the failed sends by producer and reason, as
// "producer: reason xN", sorted.
func (l *Ledger) FailureReasons() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.reasons))
	for r, n := range l.reasons {
		out = append(out, fmt.Sprintf("%s x%d", r, n))
	}
	slices.Sort(out)
	return out
}

// Seen records a record the live consumer read.
func (l *Ledger) Seen(r Rec) {
	l.mu.Lock()
	l.seen = append(l.seen, r)
	l.mu.Unlock()
}

// Snapshot copies what the ledger holds.
func (l *Ledger) Snapshot() (acks []Ack, failed map[string]bool, seen []Rec) {
	l.mu.Lock()
	defer l.mu.Unlock()
	failed = make(map[string]bool, len(l.failed))
	for v := range l.failed {
		failed[v] = true
	}
	return slices.Clone(l.acks), failed, slices.Clone(l.seen)
}

// Verdict is what Check found. A run passes when Violations is empty.
type Verdict struct {
	Acked, FailedSends, Seen, Final int
	// FailedPresent counts failed sends that are in the log anyway
	// (allowed: the broker may have stored a batch whose answer was lost).
	FailedPresent int
	Violations    []string
}

// maxListed bounds how many violations of one kind a verdict spells out.
const maxListed = 20

// Check compares what was acknowledged and what the live consumer read
// with the final read of every partition from its start:
//   - every acknowledged record is in the final read exactly once, at the
//     partition and offset of its acknowledgement (so in per-partition
//     order of the acknowledged offsets);
//   - no value is in the final read twice (idempotent producers never
//     duplicate, even for sends that failed);
//   - every value in the final read was sent by this run;
//   - every record the live consumer read is in the final read at the
//     same partition and offset: nothing a consumer saw was lost later;
//   - one producer's acknowledged records on one partition have offsets
//     in the order the producer sent them.
func Check(acks []Ack, failed map[string]bool, seen, final []Rec) Verdict {
	v := Verdict{Acked: len(acks), FailedSends: len(failed), Seen: len(seen), Final: len(final)}
	kinds := map[string]int{}
	bad := func(kind, format string, args ...any) {
		kinds[kind]++
		if kinds[kind] <= maxListed {
			v.Violations = append(v.Violations, kind+": "+fmt.Sprintf(format, args...))
		}
	}
	type pos struct {
		p int32
		o int64
	}
	where := make(map[string][]pos, len(final))
	at := make(map[pos]string, len(final))
	for _, r := range final {
		where[r.Value] = append(where[r.Value], pos{r.Partition, r.Offset})
		at[pos{r.Partition, r.Offset}] = r.Value
	}
	acked := make(map[string]bool, len(acks))
	for _, a := range acks {
		if acked[a.Value] {
			bad("acknowledged twice", "%s", a.Value)
			continue
		}
		acked[a.Value] = true
		ps := where[a.Value]
		switch {
		case len(ps) == 0:
			bad("lost", "%s acknowledged at partition %d offset %d is not in the log (offset holds %q)", a.Value, a.Partition, a.Offset, at[pos{a.Partition, a.Offset}])
		case ps[0] != (pos{a.Partition, a.Offset}):
			bad("moved", "%s acknowledged at partition %d offset %d is at partition %d offset %d", a.Value, a.Partition, a.Offset, ps[0].p, ps[0].o)
		}
	}
	for val, ps := range where {
		if len(ps) > 1 {
			bad("duplicate", "%s is in the log %d times: %v", val, len(ps), ps)
		}
		if !acked[val] {
			if failed[val] {
				v.FailedPresent++
			} else {
				bad("phantom", "%s at partition %d offset %d was never sent", val, ps[0].p, ps[0].o)
			}
		}
	}
	for _, r := range seen {
		if got, ok := at[pos{r.Partition, r.Offset}]; !ok || got != r.Value {
			bad("consumed then lost", "the live consumer read %s at partition %d offset %d; the final read has %q there", r.Value, r.Partition, r.Offset, got)
		}
	}
	type stream struct {
		producer  string
		partition int32
	}
	byStream := map[stream][]Ack{}
	for _, a := range acks {
		prod, _ := splitValue(a.Value)
		s := stream{prod, a.Partition}
		byStream[s] = append(byStream[s], a)
	}
	for s, as := range byStream {
		slices.SortFunc(as, func(x, y Ack) int { _, a := splitValue(x.Value); _, b := splitValue(y.Value); return cmp.Compare(a, b) })
		for i := 1; i < len(as); i++ {
			if as[i].Offset <= as[i-1].Offset {
				bad("reordered", "producer %s on partition %d: %s at offset %d after %s at offset %d", s.producer, s.partition, as[i].Value, as[i].Offset, as[i-1].Value, as[i-1].Offset)
			}
		}
	}
	for kind, n := range kinds {
		if n > maxListed {
			v.Violations = append(v.Violations, fmt.Sprintf("%s: %d more", kind, n-maxListed))
		}
	}
	slices.Sort(v.Violations)
	return v
}

// Value is the record value of a producer's seq-th send.
func Value(producer string, seq int64) string { return producer + "-" + strconv.FormatInt(seq, 10) }

// splitValue undoes Value; a value it cannot parse has sequence -1.
func splitValue(v string) (producer string, seq int64) {
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return v, -1
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil {
		return v, -1
	}
	return v[:i], n
}

// Stall is one fault's longest gap in acknowledgements.
type Stall struct {
	Gap       time.Duration
	Partition int32         // where it was; -1 when no partition was included
	After     time.Duration // when it began, from the fault
}

// Stalls measures, for each fault injected at faults[i], the longest
// time a partition went without an acknowledgement from client family
// client: the longest gap in the sequence (fault time, then each ack on
// that partition until the next fault or until end), taken over every
// partition for which include(i, partition) holds (nil: every
// partition). A partition with no ack in the window stalls for the whole
// window. It returns one figure per fault.
func Stalls(acks []Ack, client string, partitions int32, faults []time.Time, end time.Time, include func(fault int, partition int32) bool) []Stall {
	per := make([][]time.Time, partitions)
	for _, a := range acks {
		if a.Client == client && a.Partition >= 0 && a.Partition < partitions {
			per[a.Partition] = append(per[a.Partition], a.At)
		}
	}
	for _, ts := range per {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	out := make([]Stall, len(faults))
	for i, from := range faults {
		to := end
		if i+1 < len(faults) {
			to = faults[i+1]
		}
		worst := &out[i]
		worst.Partition = -1 // until a partition is included
		gap := func(p int, a, b time.Time) {
			if d := b.Sub(a); d > worst.Gap || worst.Partition < 0 {
				*worst = Stall{Gap: d, Partition: int32(p), After: a.Sub(from)}
			}
		}
		for p, ts := range per {
			if include != nil && !include(i, int32(p)) {
				continue
			}
			last := from
			j, _ := slices.BinarySearchFunc(ts, from, func(a, b time.Time) int { return a.Compare(b) })
			for ; j < len(ts) && !ts[j].After(to); j++ {
				gap(p, last, ts[j])
				last = ts[j]
			}
			gap(p, last, to)
		}
	}
	return out
}

// Gaps are the lengths of the stalls that cover some partition.
func Gaps(st []Stall) []time.Duration {
	var out []time.Duration
	for _, s := range st {
		if s.Partition >= 0 {
			out = append(out, s.Gap)
		}
	}
	return out
}

// Median and Max summarise durations (zero for none).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func Max(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return slices.Max(ds)
}
