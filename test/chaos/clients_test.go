package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sendEvery is how often each producer sends one record, round robin
// over the partitions: every partition sees a steady trickle of acks, so
// a gap in them is a stall and not a lull.
const sendEvery = 3 * time.Millisecond

// kgoProducer sends records with an idempotent acks=all franz-go client
// reaching the cluster through conn until ctx ends, then flushes what it
// buffered (within flushFor) and records every outcome in the ledger
// under client family family.
func kgoProducer(ctx context.Context, id, family string, conn []kgo.Opt, l *Ledger, flushFor time.Duration, opts ...kgo.Opt) error {
	cl, err := kgo.NewClient(append(slices.Concat(conn, []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), // idempotence is on by default
		kgo.ProducerLinger(2 * time.Millisecond),
		kgo.MaxBufferedRecords(50000),
	}), opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	done := func(r *kgo.Record, err error) {
		v := string(r.Value)
		if err != nil {
			l.Failed(v, err.Error())
			return
		}
		l.Acked(Ack{Client: family, Value: v, Partition: r.Partition, Offset: r.Offset, At: time.Now()})
	}
	tick := time.NewTicker(sendEvery)
	defer tick.Stop()
	for seq := int64(0); ; seq++ {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), flushFor)
			defer cancel()
			if err := cl.Flush(fctx); err != nil {
				return fmt.Errorf("producer %s: flush after the faults: %w", id, err)
			}
			return nil
		case <-tick.C:
		}
		// TryProduce never blocks: a record refused because the buffer
		// is full was never sent, and is failed (not in the log).
		cl.TryProduce(context.Background(), &kgo.Record{Partition: int32(seq % partitions), Value: []byte(Value(id, seq))}, done)
	}
}

// javaClasspath is the classpath of kafka-clients 4.3.0 and its
// dependencies (scripts/apache-kafka fetch puts them in .cache), or ""
// when the Java producer cannot run here. WEIR_CHAOS_JAVA=0 turns it off.
func javaClasspath() (cp, why string) {
	if os.Getenv("WEIR_CHAOS_JAVA") == "0" {
		return "", "WEIR_CHAOS_JAVA=0"
	}
	if _, err := exec.LookPath("javac"); err != nil {
		return "", "no javac on PATH"
	}
	_, file, _, _ := runtime.Caller(0)
	lib := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "apache-kafka", "4.3.0", "lib")
	if _, err := os.Stat(filepath.Join(lib, ".complete")); err != nil {
		return "", "no kafka-clients in " + lib + " (scripts/apache-kafka fetch)"
	}
	return lib + "/*", ""
}

// buildJava compiles java/ChaosProducer.java into dir.
func buildJava(t *testing.T, cp, dir string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "java", "ChaosProducer.java")
	if out, err := exec.Command("javac", "-cp", cp, "-d", dir, src).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
}

// javaProducer runs the Java client's idempotent acks=all producer
// (java/ChaosProducer.java) until ctx ends, then closes its stdin, which
// makes it flush, and reads every outcome it prints into the ledger. Its
// other output goes to logPath. propsFile, if set, is a client properties
// file with its security settings.
func javaProducer(ctx context.Context, id, classes, cp string, seeds []string, propsFile string, l *Ledger, logPath string) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	// The client's own log at INFO (log4j's default configuration logs
	// only errors): retries, epoch bumps and sequence errors are what a
	// failed ledger check needs to be read.
	args := []string{"-Xmx256m", "-Dorg.apache.logging.log4j.level=INFO", "-cp", classes + string(os.PathListSeparator) + cp, "ChaosProducer",
		strings.Join(seeds, ","), topic, strconv.Itoa(partitions), id, strconv.Itoa(int(sendEvery / time.Millisecond))}
	if propsFile != "" {
		args = append(args, propsFile)
	}
	cmd := exec.Command("java", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		stdin.Close()
	}()
	parseErr := readJavaOutcomes(stdout, l, logf)
	waitErr := cmd.Wait()
	wg.Wait()
	if parseErr != nil {
		return fmt.Errorf("java producer %s: %w", id, parseErr)
	}
	if waitErr != nil {
		return fmt.Errorf("java producer %s: %w (see %s)", id, waitErr, logPath)
	}
	return nil
}

// readJavaOutcomes reads "ACK partition offset value epochMillis" and
// "FAIL value reason" lines; other lines go to other.
func readJavaOutcomes(r io.Reader, l *Ledger, other io.Writer) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "ACK":
			p, err1 := strconv.ParseInt(f[1], 10, 32)
			o, err2 := strconv.ParseInt(f[2], 10, 64)
			ms, err3 := strconv.ParseInt(f[4], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				return fmt.Errorf("bad line %q: %w", sc.Text(), err)
			}
			l.Acked(Ack{Client: "java", Value: f[3], Partition: int32(p), Offset: o, At: time.UnixMilli(ms)})
		case len(f) >= 2 && f[0] == "FAIL":
			l.Failed(f[1], strings.Join(f[2:], " "))
		default:
			fmt.Fprintln(other, sc.Text())
		}
	}
	return sc.Err()
}

// liveConsumer reads the topic from the start, reaching the cluster
// through conn, while the faults go on, recording every record in the
// ledger, until ctx ends.
func liveConsumer(ctx context.Context, conn []kgo.Opt, l *Ledger) error {
	cl, err := kgo.NewClient(slices.Concat(conn, []kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(500 * time.Millisecond),
	})...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			l.Seen(Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
		})
	}
	return nil
}

// finalRead reads every partition from offset 0 up to its high
// watermark at the time of the call.
func finalRead(ctx context.Context, c *chaosCluster, timeout time.Duration) ([]Rec, error) {
	ends, err := c.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		lo, ok := ends.Lookup(topic, p)
		if !ok || lo.Err != nil {
			return nil, fmt.Errorf("end offset of partition %d: %v", p, lo.Err)
		}
		want[p] = lo.Offset
		offsets[p] = kgo.NewOffset().At(0)
	}
	cl, err := kgo.NewClient(c.clientOpts(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	next := map[int32]int64{}
	var out []Rec
	left := func() (n int) {
		for p, end := range want {
			if next[p] < end {
				n++
			}
		}
		return n
	}
	for left() > 0 {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return out, fmt.Errorf("final read: %d partitions not read up to their end %v (read up to %v): %w", left(), want, next, rctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < want[r.Partition] {
				out = append(out, Rec{Partition: r.Partition, Offset: r.Offset, Value: string(r.Value)})
			}
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
		})
	}
	return out, nil
}
