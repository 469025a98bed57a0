package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"weir/scenario"
	"weir/scenario/spec"
)

// scenarios are the subcommands of weir scenario.
var scenarios = []command{
	{"run", "run a scenario file (scenarios/*.yaml): its cluster, load, faults and phases, with a report", scenarioRun},
	{"share-drain", "one share consumer draining a Zipf-skewed backlog (the share-group fetch-wait case 2)", scenarioShareDrain},
	{"share-report", "a markdown table and charts comparing share-drain runs", scenarioShareReport},
}

func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	help := len(args) > 0 && (args[0] == "-h" || args[0] == "--help")
	if len(args) > 0 && !help {
		for _, c := range scenarios {
			if c.name == args[0] {
				return c.run(ctx, args[1:], stdout, stderr)
			}
		}
		fmt.Fprintf(stderr, "weir scenario: unknown scenario %q\n\n", args[0])
	}
	w := stdout
	if !help {
		w = stderr
	}
	fmt.Fprintln(w, "Usage: weir scenario <scenario> [flags]")
	fmt.Fprintln(w, "Reproducible experiments (scenarios/README.md, the scenario package docs):")
	for _, c := range scenarios {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	if help {
		return nil
	}
	return errUsage
}

func scenarioRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scenario run", "scenario run FILE.yaml [--quick] [--variant NAME ...] [--out DIR] [flags]", stderr)
	quick := fs.Bool("quick", false, "the file's quick mode: durations and record counts scaled down (quick.scale), only quick.variants")
	var variants listFlags
	fs.Var(&variants, "variant", "run only this variant (repeatable; default all, or quick.variants with --quick)")
	out := fs.String("out", "bench/out/scenarios", "directory for each run's report, NAME[-VARIANT][-quick].html and .json")
	dir := fs.String("dir", "", "directory for the clusters' data and logs, kept after the run (default: a temporary one, removed)")
	weirBin := fs.String("weir", "", "weir binary the cluster's nodes run (default: this one)")
	check := fs.Bool("check", false, "only read and check the file, print it as it would run, and exit")
	verbose := fs.Bool("verbose", false, "log client activity to stderr")
	pprofBase := fs.Int("pprof-base-port", 0, "profiling only: a weir cluster's node 1 serves /debug/pprof/ on this port, node N on base+N-1 (default: off)")
	// The file may come before the flags or after them.
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if file == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "want one scenario file")
		fs.Usage()
		return errUsage
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	f, err := spec.Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(variants) > 0 {
		keep := f.Variants[:0]
		for _, v := range f.Variants {
			if slices.Contains(variants, v.Name) {
				keep = append(keep, v)
			}
		}
		if len(keep) != len(variants) {
			return fmt.Errorf("%s: --variant %v: not every name is a variant of the file", file, []string(variants))
		}
		f.Variants, f.Quick.Variants = keep, nil
	}
	if *check {
		for _, v := range f.VariantNames(*quick) {
			rf, err := f.Resolve(v, *quick)
			if err != nil {
				return err
			}
			b, _ := yaml.Marshal(rf)
			fmt.Fprintf(stdout, "# variant %q\n%s", v, b)
		}
		return nil
	}
	cfg := scenario.RunConfig{WeirBinary: *weirBin, Dir: *dir, Out: *out, Stdout: stdout, PprofBasePort: *pprofBase}
	if cfg.WeirBinary == "" {
		if cfg.WeirBinary, err = os.Executable(); err != nil {
			return err
		}
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	results, err := scenario.RunFile(ctx, f, *quick, cfg)
	for _, r := range results {
		fmt.Fprintf(stdout, "report: %s\n", filepath.Join(*out, scenario.ReportStem(r)+".html"))
	}
	return err
}

func scenarioShareDrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := scenario.DefaultConfig()
	fs := newFlagSet("scenario share-drain", "scenario share-drain --bootstrap HOST:PORT[,...] --client java|weir --acquire-mode record_limit|batch_optimized [flags]", stderr)
	fs.StringVar(&cfg.Bootstrap, "bootstrap", "", "broker(s), host:port[,host:port...] (required)")
	fs.StringVar(&cfg.Client, "client", cfg.Client, "share consumer: java (KafkaShareConsumer 4.3.0 in a JVM) or weir (client.ShareConsumer)")
	fs.StringVar(&cfg.AcquireMode, "acquire-mode", cfg.AcquireMode, "share.acquire.mode: record_limit or batch_optimized")
	fs.Int64Var(&cfg.Records, "records", cfg.Records, "backlog size in records")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions of the topic")
	fs.IntVar(&cfg.ReplicationFactor, "replication-factor", cfg.ReplicationFactor, "replication factor of the topic")
	fs.Float64Var(&cfg.ZipfAlpha, "zipf-alpha", cfg.ZipfAlpha, "Zipf exponent of the backlog's split across partitions (0 is even)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the Zipf split (same seed, same counts)")
	fs.IntVar(&cfg.MaxPollRecords, "max-poll-records", cfg.MaxPollRecords, "max.poll.records of the consumer")
	fs.DurationVar(&cfg.FetchMaxWait, "fetch-max-wait", cfg.FetchMaxWait, "fetch.max.wait.ms of the consumer")
	fs.IntVar(&cfg.ValueSize, "value-size", cfg.ValueSize, "bytes per record value")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "give up the drain after this long (the load is not counted)")
	fs.DurationVar(&cfg.SampleInterval, "sample-interval", cfg.SampleInterval, "how often the drain rate is sampled (shorter for small backlogs that drain in seconds)")
	fs.StringVar(&cfg.Topic, "topic", "", "topic name (default share-drain-<client>-<mode>-<time>; created if missing)")
	fs.StringVar(&cfg.Group, "group", "", "share group (default: the topic name)")
	fs.StringVar(&cfg.Out, "out", "", "directory for the CSV and HTML report (default: none written)")
	fs.StringVar(&cfg.Name, "name", "", "file name stem of the report (default share-drain-<client>-<mode>)")
	fs.StringVar(&cfg.JavaDir, "java-dir", "", "the Java driver's Maven project (default: scenario/java above the working directory)")
	brokerConfigs := kvFlags{}
	fs.Var(brokerConfigs, "broker-config", "dynamic broker config set as a cluster default for the run and deleted after it (key=value, repeatable), e.g. weir.share.fetch.elsewhere.wait.ms=-1")
	fs.StringVar(&cfg.CPUProfile, "cpuprofile", "", "profiling only: write the weir client's CPU profile of the drain to this file")
	fs.StringVar(&cfg.MemProfile, "memprofile", "", "profiling only: write the weir client's allocation profile, taken after the drain, to this file")
	verbose := fs.Bool("verbose", false, "log client activity to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := requireFlag(fs, "bootstrap", cfg.Bootstrap); err != nil {
		return err
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if len(brokerConfigs) > 0 {
		cfg.BrokerConfigs = brokerConfigs
	}
	cfg.Stdout = stdout
	_, err := scenario.Run(ctx, cfg)
	return err
}

func scenarioShareReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("scenario share-report", "scenario share-report --out FILE.md [--title T] [--setup TEXT] [--reference LABEL] LABEL=STEM ...", stderr)
	out := fs.String("out", "", "markdown file to write; the charts go next to it as <name>-rate.svg and <name>-rate-log.svg (required)")
	title := fs.String("title", "Share group drain", "title of the page")
	setup := fs.String("setup", "", "text under the title: cluster, machine, command")
	ref := fs.String("reference", "", "label of the run the drain-time ratio divides by")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if err := requireFlag(fs, "out", *out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "no runs given: want LABEL=STEM arguments (STEM.json and STEM.csv written by share-drain)")
		return errUsage
	}
	c := scenario.Comparison{Title: *title, Setup: *setup, Reference: -1,
		ChartPrefix: strings.TrimSuffix(filepath.Base(*out), ".md")}
	for _, a := range fs.Args() {
		label, stem, ok := strings.Cut(a, "=")
		if !ok {
			fmt.Fprintf(stderr, "run %q: want LABEL=STEM\n", a)
			return errUsage
		}
		run, err := scenario.LoadRun(label, stem)
		if err != nil {
			return err
		}
		if label == *ref {
			c.Reference = len(c.Runs)
		}
		c.Runs = append(c.Runs, run)
	}
	if *ref != "" && c.Reference < 0 {
		fmt.Fprintf(stderr, "no run labelled %q\n", *ref)
		return errUsage
	}
	if err := scenario.WriteComparison(filepath.Dir(*out), filepath.Base(*out), c); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}
