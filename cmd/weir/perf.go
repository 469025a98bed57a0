package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"weir/perf"
)

func runPerf(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, "Usage: weir perf produce|consume|copy [flags]")
		fmt.Fprintln(stdout, "Flags and output follow Kafka's producer and consumer performance tools.")
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	switch args[0] {
	case "produce":
		return perfProduce(ctx, args[1:], stdout, stderr)
	case "consume":
		return perfConsume(ctx, args[1:], stdout, stderr)
	case "copy":
		return perfCopy(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "weir perf: unknown subcommand %q (want produce, consume or copy)\n", args[0])
	return errUsage
}

// spreadMultiValue rewrites Kafka's "--producer-props a=1 b=2" (several
// values after one flag) into "--producer-props a=1 --producer-props b=2"
// so the flag package can read it.
func spreadMultiValue(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a != "--"+name && a != "-"+name {
			continue
		}
		first := true
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			if !first {
				out = append(out, a)
			}
			out = append(out, args[i+1])
			first = false
			i++
		}
	}
	return out
}

func perfProduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf produce", "perf produce --topic T --num-records N --record-size S --throughput R [--producer-props k=v ...] [--print-metrics]", stderr)
	topic := fs.String("topic", "", "topic to produce to (required)")
	num := fs.Int64("num-records", 0, "number of records to produce (required)")
	size := fs.Int("record-size", 0, "bytes per record (required)")
	throughput := fs.Float64("throughput", -1, "target records/sec; -1 means unthrottled")
	props := kvFlags{}
	fs.Var(props, "producer-props", "producer properties key=value ... (Kafka names; bootstrap.servers defaults to 127.0.0.1:9092)")
	printMetrics := fs.Bool("print-metrics", false, "print the producer's metrics at the end")
	every := fs.Duration("report-interval", 5*time.Second, "interval between progress lines")
	keySpace := fs.Int64("key-space", 0, "give record i the key k%012d of i mod N, each key updated in turn (default: no keys)")
	latencyLog := fs.String("latency-log", "", "write each sampled record's send time (Unix ms) and latency (µs) to this file after the run")
	txnID := fs.String("transactional-id", "", "send in transactions with this transactional.id, committed every --transaction-duration-ms")
	txnMs := fs.Int64("transaction-duration-ms", 0, "how long each transaction stays open before it is committed (default 3000 with --transactional-id; alone it enables transactions with the id performance-producer-default-transactional-id)")
	if err := parseFlags(fs, spreadMultiValue(args, "producer-props")); err != nil {
		return err
	}
	if err := requireFlag(fs, "topic", *topic); err != nil {
		return err
	}
	if *num <= 0 || *size <= 0 {
		fmt.Fprintln(stderr, "--num-records and --record-size must be positive")
		return errUsage
	}
	if _, ok := props["bootstrap.servers"]; !ok {
		props["bootstrap.servers"] = "127.0.0.1:9092"
	}
	if *txnMs < 0 {
		fmt.Fprintln(stderr, "--transaction-duration-ms must be positive")
		return errUsage
	}
	if *txnMs > 0 && *txnID == "" {
		*txnID = "performance-producer-default-transactional-id"
	}
	cfg := perf.ProduceConfig{
		Topic: *topic, NumRecords: *num, RecordSize: *size, Throughput: *throughput, Props: props, ReportEvery: *every, KeySpace: *keySpace,
		TransactionalID: *txnID, TransactionDuration: time.Duration(*txnMs) * time.Millisecond,
	}
	if *latencyLog != "" {
		f, err := os.Create(*latencyLog)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.LatencyLog = f
	}
	res, err := perf.Produce(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	res.WriteSummary(stdout)
	if *printMetrics {
		res.Metrics.WriteTo(stdout)
	}
	if res.Errors > 0 {
		return fmt.Errorf("%d records failed, first: %v", res.Errors, res.FirstError)
	}
	return nil
}

func perfConsume(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf consume", "perf consume --topic T --messages N [--group G] [--consumer-props k=v ...]", stderr)
	topic := fs.String("topic", "", "topic to consume (required)")
	num := fs.Int64("messages", 0, "number of records to consume (required)")
	group := fs.String("group", "", "consume as a member of this group (default: assign every partition, no group)")
	bootstrap := fs.String("bootstrap-server", "127.0.0.1:9092", "broker(s) to connect to")
	props := kvFlags{}
	fs.Var(props, "consumer-props", "consumer properties key=value ... (Kafka names)")
	timeout := fs.Duration("timeout", 10*time.Second, "stop when no record arrives for this long")
	if err := parseFlags(fs, spreadMultiValue(args, "consumer-props")); err != nil {
		return err
	}
	if err := requireFlag(fs, "topic", *topic); err != nil {
		return err
	}
	if *num <= 0 {
		fmt.Fprintln(stderr, "--messages must be positive")
		return errUsage
	}
	if _, ok := props["bootstrap.servers"]; !ok {
		props["bootstrap.servers"] = *bootstrap
	}
	res, err := perf.Consume(ctx, perf.ConsumeConfig{Topic: *topic, NumRecords: *num, Group: *group, Props: props, Timeout: *timeout})
	if err != nil {
		return err
	}
	res.WriteSummary(stdout)
	if res.Records < *num {
		return fmt.Errorf("only %d of %d records arrived within %v of the last one", res.Records, *num, *timeout)
	}
	return nil
}

func perfCopy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("perf copy", "perf copy --from T --to T --messages N [--group G] [--transactional-id ID] [--transaction-duration-ms D]", stderr)
	from := fs.String("from", "", "topic to read, read_committed, in a group (required)")
	to := fs.String("to", "", "topic to write the records to (required)")
	num := fs.Int64("messages", 0, "records to copy (required)")
	group := fs.String("group", "perf-copy", "the reading group, whose offsets each transaction commits")
	txnID := fs.String("transactional-id", "perf-copy", "the writing producer's transactional.id")
	txnMs := fs.Int64("transaction-duration-ms", 100, "how long each transaction stays open before it is committed")
	bootstrap := fs.String("bootstrap-server", "127.0.0.1:9092", "broker(s) to connect to")
	pprops, cprops := kvFlags{}, kvFlags{}
	fs.Var(pprops, "producer-props", "producer properties key=value ... (Kafka names)")
	fs.Var(cprops, "consumer-props", "consumer properties key=value ... (Kafka names)")
	timeout := fs.Duration("timeout", 10*time.Second, "stop when no record arrives for this long")
	if err := parseFlags(fs, spreadMultiValue(spreadMultiValue(args, "producer-props"), "consumer-props")); err != nil {
		return err
	}
	if err := requireFlag(fs, "from", *from); err != nil {
		return err
	}
	if err := requireFlag(fs, "to", *to); err != nil {
		return err
	}
	if *num <= 0 || *txnMs <= 0 {
		fmt.Fprintln(stderr, "--messages and --transaction-duration-ms must be positive")
		return errUsage
	}
	res, err := perf.Copy(ctx, perf.CopyConfig{
		From: *from, To: *to, Group: *group, TransactionalID: *txnID, TransactionDuration: time.Duration(*txnMs) * time.Millisecond,
		NumRecords: *num, Props: map[string]string{"bootstrap.servers": *bootstrap}, ProducerProps: pprops, ConsumerProps: cprops, Timeout: *timeout,
	})
	if err != nil {
		return err
	}
	res.WriteSummary(stdout)
	return nil
}
