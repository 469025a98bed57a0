package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const usage = `usage:
  compare-probe first-ack -bootstrap HOST:PORT -pid-file FILE [-topic T] [-timeout D]
  compare-probe create-topics -bootstrap HOST:PORT [-partitions N] [-timeout D] TOPIC...`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "first-ack":
		err = firstAck(ctx, os.Args[2:], os.Stdout, os.Stderr)
	case "create-topics":
		err = createTopics(ctx, os.Args[2:], os.Stderr)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "compare-probe %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// boottime reads CLOCK_BOOTTIME, the clock the kernel stamps a process's
// start with in /proc/PID/stat.
func boottime() time.Duration {
	const clockBoottime = 7
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockBoottime, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		panic(fmt.Sprintf("clock_gettime(CLOCK_BOOTTIME): %v", errno))
	}
	return time.Duration(ts.Nano())
}

// processStart returns when the process in pidFile started, on the
// CLOCK_BOOTTIME scale, truncated to whole clock ticks by the kernel.
func processStart(pidFile string, ticksPerSecond int) (time.Duration, error) {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, err
	}
	pid := strings.TrimSpace(string(raw))
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses: fields are
	// counted after the last ')'. starttime is field 22, state field 3.
	end := strings.LastIndexByte(string(stat), ')')
	if end < 0 {
		return 0, fmt.Errorf("unexpected /proc/%s/stat", pid)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 20 {
		return 0, fmt.Errorf("short /proc/%s/stat", pid)
	}
	ticks, err := strconv.ParseInt(fields[22-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("starttime in /proc/%s/stat: %w", pid, err)
	}
	return time.Duration(ticks) * time.Second / time.Duration(ticksPerSecond), nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 1, 64) }

// firstAck polls the listener until it accepts, then produces one small
// record (acks=all, topic created on first use) until it is acknowledged,
// and prints the times since the broker process started.
func firstAck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("first-ack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "", "broker address host:port")
	pidFile := fs.String("pid-file", "", "file holding the broker's pid, read after the first ack")
	topic := fs.String("topic", "startup-probe", "topic to produce to (auto-created)")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after this long")
	poll := fs.Duration("poll", 2*time.Millisecond, "pause between connection and produce attempts")
	clkTck := fs.Int("clk-tck", 100, "kernel clock ticks per second (getconf CLK_TCK)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bootstrap == "" || *pidFile == "" || *clkTck <= 0 {
		return errors.New("-bootstrap and -pid-file are required, -clk-tck must be positive")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var dialer net.Dialer
	for {
		dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		conn, err := dialer.DialContext(dctx, "tcp", *bootstrap)
		dcancel()
		if err == nil {
			conn.Close()
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s never accepted a connection: %w", *bootstrap, err)
		}
		time.Sleep(*poll)
	}
	accepted := boottime()

	backoff := func(int) time.Duration { return *poll }
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(*bootstrap),
		kgo.AllowAutoTopicCreation(),
		kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(backoff),
		kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RequestRetries(1000),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	attempts := 0
	for {
		attempts++
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		err := cl.ProduceSync(actx, &kgo.Record{Topic: *topic, Value: []byte("first")}).FirstErr()
		acancel()
		if err == nil {
			break
		}
		fmt.Fprintf(stderr, "first-ack: attempt %d: %v\n", attempts, err)
		if ctx.Err() != nil {
			return fmt.Errorf("no produce acknowledged: %w", err)
		}
		time.Sleep(*poll)
	}
	acked := boottime()

	ackedWall := time.Now()

	// The script writes the pid file right after forking the broker; give
	// it a moment in case the broker was quicker than that write.
	var started time.Duration
	for {
		started, err = processStart(*pidFile, *clkTck)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "startup_ms=%s accept_ms=%s attempts=%d ack_unix_ns=%d\n",
		ms(acked-started), ms(accepted-started), attempts, ackedWall.UnixNano())
	return nil
}

// createTopics creates the topics and waits until each partition has a
// leader, so that the load generator's first metadata answer is complete.
func createTopics(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("create-topics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bootstrap := fs.String("bootstrap", "", "broker address host:port")
	partitions := fs.Int("partitions", 6, "partitions per topic")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	topics := fs.Args()
	if *bootstrap == "" || len(topics) == 0 || *partitions < 1 {
		return errors.New("-bootstrap, a positive -partitions and at least one topic are required")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(*bootstrap))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	created, err := adm.CreateTopics(ctx, int32(*partitions), 1, nil, topics...)
	if err != nil {
		return err
	}
	if err := created.Error(); err != nil {
		return err
	}
	for {
		details, err := adm.ListTopics(ctx, topics...)
		if err == nil && ready(details, topics, *partitions) {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("partitions still without a leader: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ready(details kadm.TopicDetails, topics []string, partitions int) bool {
	for _, t := range topics {
		d, ok := details[t]
		if !ok || d.Err != nil || len(d.Partitions) != partitions {
			return false
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}
