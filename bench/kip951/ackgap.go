package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// killEvent is one SIGKILL and restart of a node, in unix nanoseconds.
type killEvent struct {
	node                 int32
	controller           bool
	led                  int // partitions the node led when killed
	kill, killed         int64
	restart, restarted   int64
	isrFull              int64 // every partition back to a full ISR (0: not seen)
	windowEnd            int64 // where this kill's analysis ends (the next kill)
	restartErr, isrError string
}

// ackGap produces at a steady rate, kills and restarts nodes on a
// schedule, and reports the acknowledgement stalls around each kill.
func ackGap(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("ackgap", flag.ContinueOnError)
	bootstrap := fs.String("bootstrap", "", "bootstrap servers")
	topic := fs.String("topic", "", "topic to produce to (partitions are used round-robin)")
	rate := fs.Int("rate", 5000, "records per second")
	size := fs.Int("size", 512, "bytes per record")
	clusterDir := fs.String("cluster-dir", "", "the local cluster's directory (weir cluster up --dir)")
	weir := fs.String("weir", "", "weir binary, for `weir cluster kill|start`")
	kills := fs.Int("kills", 5, "number of kills")
	warmup := fs.Duration("warmup", 10*time.Second, "produce this long before the first kill")
	interval := fs.Duration("interval", 20*time.Second, "time between kills")
	down := fs.Duration("down", 6*time.Second, "how long a killed node stays down")
	tail := fs.Duration("tail", 5*time.Second, "produce this long after the last kill's interval")
	out := fs.String("out", "", "prefix of the output files (PREFIX-timeline.csv, PREFIX-kills.txt); empty: stdout only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bootstrap == "" || *topic == "" || *clusterDir == "" || *weir == "" || *rate < 1 || *kills < 0 {
		return errors.New("-bootstrap, -topic, -cluster-dir, -weir and a positive -rate are required")
	}
	cl, adm, err := newAdmin(*bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	view, err := oneView(ctx, cl, adm, *topic)
	if err != nil {
		return err
	}
	partitions := len(view)

	prod, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*bootstrap, ",")...),
		kgo.DefaultProduceTopic(*topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(1<<21),
		kgo.RecordDeliveryTimeout(2*time.Minute),
		// Like the Java client's retry.backoff.ms: a failed produce may
		// refresh metadata after 100 ms, not franz-go's default 5 s.
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ProducerLinger(time.Millisecond),
	)
	if err != nil {
		return err
	}

	total := *warmup + time.Duration(*kills)*(*interval) + *tail
	n := int(total.Seconds() * float64(*rate))
	sends := make([]int64, n)
	acks := make([]int64, n)
	var failed atomic.Int64
	var firstErr atomic.Value
	value := make([]byte, *size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}

	start := time.Now().Add(200 * time.Millisecond)
	sctx, cancelSend := context.WithCancel(ctx)
	defer cancelSend()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		per := time.Second / time.Duration(*rate)
		for i := 0; i < n; i++ {
			due := start.Add(time.Duration(i) * per)
			if d := time.Until(due); d > 0 {
				select {
				case <-sctx.Done():
					return
				case <-time.After(d):
				}
			}
			sends[i] = time.Now().UnixNano()
			r := &kgo.Record{Value: value, Partition: int32(i % partitions)}
			prod.Produce(sctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					return
				}
				acks[i] = time.Now().UnixNano()
			})
		}
	}()

	var events []killEvent
	for k := 0; k < *kills; k++ {
		at := start.Add(*warmup + time.Duration(k)*(*interval))
		select {
		case <-ctx.Done():
			cancelSend()
			wg.Wait()
			prod.Close()
			return ctx.Err()
		case <-time.After(time.Until(at)):
		}
		ev, err := killOne(ctx, cl, *topic, *clusterDir, *weir, k, *down)
		if err != nil {
			cancelSend()
			wg.Wait()
			prod.Close()
			return err
		}
		ev.windowEnd = start.Add(*warmup + time.Duration(k+1)*(*interval)).UnixNano()
		events = append(events, ev)
		fmt.Fprintf(os.Stderr, "kill %d: node %d (controller=%v, led %d) killed in %.0f ms, restarted after %.0f ms, full ISR %.0f ms after the kill %s%s\n",
			k+1, ev.node, ev.controller, ev.led, msOf(time.Duration(ev.killed-ev.kill)),
			msOf(time.Duration(ev.restarted-ev.kill)), msOf(time.Duration(ev.isrFull-ev.kill)), ev.restartErr, ev.isrError)
	}
	wg.Wait()
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	ferr := prod.Flush(fctx)
	cancel()
	prod.Close()
	if ferr != nil {
		fmt.Fprintf(os.Stderr, "flush: %v\n", ferr)
	}

	// Every callback has run (Close waits for them): acks and sends are
	// read by this goroutine only from here.
	return report(*out, *rate, partitions, start.UnixNano(), sends, acks, events, failed.Load(), firstErr.Load())
}

// killOne SIGKILLs the leader of partition k (mod the partition count)
// through `weir cluster kill`, restarts it after down, and waits for every
// partition's ISR to be full again.
func killOne(ctx context.Context, cl *kgo.Client, topic, dir, weir string, k int, down time.Duration) (killEvent, error) {
	var ev killEvent
	md, err := cl.Request(ctx, metadataReq(topic))
	if err != nil {
		return ev, err
	}
	leaders, controller, err := leadersOf(md)
	if err != nil {
		return ev, err
	}
	ev.node = leaders[k%len(leaders)]
	ev.controller = ev.node == controller
	for _, l := range leaders {
		if l == ev.node {
			ev.led++
		}
	}
	ev.kill = time.Now().UnixNano()
	if b, err := exec.CommandContext(ctx, weir, "cluster", "kill", "--dir", dir, strconv.Itoa(int(ev.node))).CombinedOutput(); err != nil {
		return ev, fmt.Errorf("weir cluster kill %d: %v: %s", ev.node, err, b)
	}
	ev.killed = time.Now().UnixNano()
	select {
	case <-ctx.Done():
		return ev, ctx.Err()
	case <-time.After(down - time.Duration(ev.killed-ev.kill)):
	}
	ev.restart = time.Now().UnixNano()
	if b, err := exec.CommandContext(ctx, weir, "cluster", "start", "--dir", dir, strconv.Itoa(int(ev.node))).CombinedOutput(); err != nil {
		ev.restartErr = fmt.Sprintf("(restart failed: %v: %s)", err, strings.TrimSpace(string(b)))
	}
	ev.restarted = time.Now().UnixNano()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		md, err := cl.Request(wctx, metadataReq(topic))
		if err == nil {
			if fullISR(md) {
				ev.isrFull = time.Now().UnixNano()
				return ev, nil
			}
		}
		select {
		case <-wctx.Done():
			ev.isrError = "(ISR not full within 60 s of the restart)"
			return ev, nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stall is what one window of the run saw.
type stall struct {
	globalGap   int64 // longest time with no acknowledgement at all
	gapStart    int64
	partGap     int64 // longest time one partition went without an ack
	partGapPart int
	maxLatency  int64 // slowest record sent in the window
	sent, lost  int
}

// analyse looks at the window [from, to): gaps between consecutive
// acknowledgements that end after from and start before to, and the
// records sent in it. ackTimes must be sorted.
func analyse(from, to int64, ackTimes []int64, perPart [][]int64, sends, acks []int64) stall {
	var s stall
	s.globalGap, s.gapStart = longestGap(ackTimes, from, to)
	for p, ts := range perPart {
		if g, _ := longestGap(ts, from, to); g > s.partGap {
			s.partGap, s.partGapPart = g, p
		}
	}
	for i, t := range sends {
		if t < from || t >= to {
			continue
		}
		s.sent++
		if acks[i] == 0 {
			s.lost++
			continue
		}
		s.maxLatency = max(s.maxLatency, acks[i]-t)
	}
	return s
}

// longestGap returns the longest interval between consecutive times of
// sorted ts that ends after from and starts before to; a window with no
// time in it at all counts from the last time before it (or from) to the
// first after it (or to).
func longestGap(ts []int64, from, to int64) (gap, at int64) {
	i := sort.Search(len(ts), func(i int) bool { return ts[i] > from })
	prev := from
	if i > 0 {
		prev = ts[i-1]
	}
	for ; i < len(ts); i++ {
		if ts[i]-prev > gap {
			gap, at = ts[i]-prev, prev
		}
		if ts[i] >= to {
			return gap, at
		}
		prev = ts[i]
	}
	if to-prev > gap {
		gap, at = to-prev, prev
	}
	return gap, at
}

func report(out string, rate, partitions int, start int64, sends, acks []int64, events []killEvent, failed int64, firstErr any) error {
	var ackTimes []int64
	perPart := make([][]int64, partitions)
	for i, a := range acks {
		if a == 0 {
			continue
		}
		ackTimes = append(ackTimes, a)
		perPart[i%partitions] = append(perPart[i%partitions], a)
	}
	slices.Sort(ackTimes)
	for _, ts := range perPart {
		slices.Sort(ts)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# ackgap rate=%d partitions=%d records=%d acked=%d failed=%d", rate, partitions, len(sends), len(ackTimes), failed)
	if firstErr != nil {
		fmt.Fprintf(&b, " first_error=%q", firstErr)
	}
	b.WriteString("\n")
	if len(events) > 0 {
		// The quiet stretch before the first kill (after a 2 s settling
		// period) is the reference for what a gap looks like without one.
		base := analyse(start+int64(2*time.Second), events[0].kill, ackTimes, perPart, sends, acks)
		fmt.Fprintf(&b, "baseline global_gap_ms=%.1f partition_gap_ms=%.1f max_latency_ms=%.1f\n",
			nsMs(base.globalGap), nsMs(base.partGap), nsMs(base.maxLatency))
	}
	for k, ev := range events {
		// The kill's window runs from the kill to the restart; the
		// restart's from the restart to the next kill.
		kw := analyse(ev.kill, ev.restart, ackTimes, perPart, sends, acks)
		rw := analyse(ev.restart, ev.windowEnd, ackTimes, perPart, sends, acks)
		fmt.Fprintf(&b, "kill %d node=%d controller=%v led=%d global_gap_ms=%.1f gap_from_kill_ms=%.1f partition_gap_ms=%.1f partition=%d max_latency_ms=%.1f lost=%d restart_global_gap_ms=%.1f restart_partition_gap_ms=%.1f restart_max_latency_ms=%.1f isr_full_after_kill_ms=%.1f %s%s\n",
			k+1, ev.node, ev.controller, ev.led, nsMs(kw.globalGap), nsMs(kw.gapStart-ev.kill), nsMs(kw.partGap), kw.partGapPart,
			nsMs(kw.maxLatency), kw.lost, nsMs(rw.globalGap), nsMs(rw.partGap), nsMs(rw.maxLatency),
			nsMs(ev.isrFull-ev.kill), ev.restartErr, ev.isrError)
	}
	fmt.Print(b.String())
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out+"-kills.txt", []byte(b.String()), 0o644); err != nil {
		return err
	}
	return writeTimeline(out+"-timeline.csv", start, sends, acks, events)
}

// writeTimeline writes, per 100 ms from the start, the records sent and
// acknowledged and the events in it.
func writeTimeline(path string, start int64, sends, acks []int64, events []killEvent) error {
	const bucket = int64(100 * time.Millisecond)
	var last int64
	for _, t := range acks {
		last = max(last, t)
	}
	for _, t := range sends {
		last = max(last, t)
	}
	nb := int((last-start)/bucket) + 1
	if nb < 1 {
		nb = 1
	}
	sent, acked := make([]int, nb), make([]int, nb)
	idx := func(t int64) int { return min(max(int((t-start)/bucket), 0), nb-1) }
	for i := range sends {
		if sends[i] != 0 {
			sent[idx(sends[i])]++
		}
		if acks[i] != 0 {
			acked[idx(acks[i])]++
		}
	}
	marks := make([]string, nb)
	for k, ev := range events {
		marks[idx(ev.kill)] += fmt.Sprintf("kill%d(node%d) ", k+1, ev.node)
		marks[idx(ev.restart)] += fmt.Sprintf("restart%d ", k+1)
		if ev.isrFull != 0 {
			marks[idx(ev.isrFull)] += fmt.Sprintf("isr_full%d ", k+1)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "t_s,sent,acked,event")
	for i := range nb {
		fmt.Fprintf(w, "%.1f,%d,%d,%s\n", float64(i)/10, sent[i], acked[i], strings.TrimSpace(marks[i]))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func nsMs(ns int64) float64 { return float64(ns) / 1e6 }
