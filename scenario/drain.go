package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"weir/client"
)

// Clients the drain can run.
const (
	ClientJava = "java" // KafkaShareConsumer from kafka-clients 4.3.0, in a JVM subprocess
	ClientWeir = "weir" // client.ShareConsumer, in process
)

// Config describes one share-drain run. Zero values take the defaults of
// DefaultConfig where noted.
type Config struct {
	Bootstrap         string
	Client            string // ClientJava or ClientWeir
	AcquireMode       string // record_limit or batch_optimized
	Records           int64
	Partitions        int
	ReplicationFactor int
	ZipfAlpha         float64
	Seed              uint64
	MaxPollRecords    int
	FetchMaxWait      time.Duration // fetch.max.wait.ms of the consumer
	ValueSize         int           // bytes per record value
	Timeout           time.Duration // bound on the drain (not the load)
	SampleInterval    time.Duration // how often the drain rate is read

	Topic, Group string // default: share-drain-<client>-<mode>-<unix time>
	Out          string // directory for the CSV and HTML; "" writes none
	Name         string // file name stem in Out; default share-drain-<client>-<mode>
	JavaDir      string // the Maven project of the Java driver (scenario/java)

	// BrokerConfigs are dynamic broker configs set as cluster defaults for
	// the run and deleted after it, for example
	// weir.share.fetch.elsewhere.wait.ms=-1 to drain without weir's
	// broker-side help for record_limit consumers.
	BrokerConfigs map[string]string

	// CPUProfile and MemProfile, when set, are files for the drain's CPU
	// profile and the allocation profile taken after it (weir client
	// only: the Java client runs in another process). The load is not
	// profiled.
	CPUProfile, MemProfile string

	Logger *slog.Logger
	Stdout io.Writer // progress and the summary
}

// DefaultConfig is the seed's case 2: 2,000,000 records on 12 partitions,
// Zipf alpha 2, max.poll.records 500 and Kafka's fetch.max.wait.ms, 500 ms.
func DefaultConfig() Config {
	return Config{
		Client:            ClientWeir,
		AcquireMode:       "record_limit",
		Records:           2_000_000,
		Partitions:        12,
		ReplicationFactor: 1,
		ZipfAlpha:         2,
		Seed:              1,
		MaxPollRecords:    500,
		FetchMaxWait:      500 * time.Millisecond,
		ValueSize:         100,
		Timeout:           20 * time.Minute,
		SampleInterval:    time.Second,
	}
}

func (c *Config) validate() error {
	switch {
	case c.Bootstrap == "":
		return errors.New("scenario: no bootstrap servers")
	case c.Client != ClientJava && c.Client != ClientWeir:
		return fmt.Errorf("scenario: client %q, want java or weir", c.Client)
	case c.AcquireMode != "record_limit" && c.AcquireMode != "batch_optimized":
		return fmt.Errorf("scenario: acquire mode %q, want record_limit or batch_optimized", c.AcquireMode)
	case c.Records <= 0 || c.Partitions <= 0 || c.MaxPollRecords <= 0 || c.ReplicationFactor <= 0:
		return errors.New("scenario: records, partitions, replication factor and max.poll.records must be positive")
	case c.Timeout <= 0:
		return errors.New("scenario: the drain needs a timeout")
	case (c.CPUProfile != "" || c.MemProfile != "") && c.Client != ClientWeir:
		return errors.New("scenario: profiles are taken of the weir client only")
	case c.SampleInterval < 10*time.Millisecond:
		return errors.New("scenario: the sampling interval must be 10ms or more")
	}
	stem := fmt.Sprintf("share-drain-%s-%s", c.Client, c.AcquireMode)
	if c.Topic == "" {
		c.Topic = fmt.Sprintf("%s-%d", stem, time.Now().UnixNano())
	}
	if c.Group == "" {
		c.Group = c.Topic
	}
	if c.Name == "" {
		c.Name = stem
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	return nil
}

// Result is the outcome of one drain.
type Result struct {
	Backlog    []int64 // records per partition when the consumer started
	Leaders    []int32 // each partition's leader then (-1: unknown)
	Series     Series
	Summary    Summary
	Consumed   int64 // deliveries, duplicates included
	Distinct   int64 // distinct (partition, offset) pairs delivered
	Duplicates int64
	Drained    bool   // every record of the backlog was delivered
	CSV, HTML  string // files written, if any (and <name>.json, a RunRecord)
}

// drainSpec is what a consumer driver needs to know.
type drainSpec struct {
	cfg    Config
	expect int64 // records to drain
}

// drainOutcome is what a consumer driver reports.
type drainOutcome struct {
	series                         Series
	consumed, distinct, duplicates int64
	// first and last are when the first and the last records arrived,
	// measured by the driver to the millisecond; zero when none did.
	first, last time.Duration
}

// Run creates the topic, loads the skewed backlog, drains it with one
// share consumer and writes the report. Nothing produces during the drain.
// Every process and goroutine it starts has stopped when it returns.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	out := cfg.Stdout
	counts, err := ZipfSplit(cfg.Records, cfg.Partitions, cfg.ZipfAlpha, cfg.Seed)
	if err != nil {
		return nil, err
	}
	adm, err := client.NewAdmin(map[string]string{"bootstrap.servers": cfg.Bootstrap}, client.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	err = createTopic(actx, adm, cfg)
	cancel()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "topic %s, %d partitions, group %s\n", cfg.Topic, cfg.Partitions, cfg.Group)
	if len(cfg.BrokerConfigs) > 0 {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		restore, err := setBrokerConfigs(actx, adm, cfg.BrokerConfigs)
		cancel()
		if err != nil {
			return nil, err
		}
		defer func() {
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := restore(rctx); err != nil {
				fmt.Fprintf(out, "could not delete the broker configs set for the run: %v\n", err)
			}
		}()
		fmt.Fprintf(out, "broker configs for this run (cluster defaults, read back): %s\n", joinConfigs(cfg.BrokerConfigs))
	}
	start := time.Now()
	if err := load(ctx, cfg, counts); err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	fmt.Fprintf(out, "loaded %d records in %s (Zipf alpha %g, seed %d)\n", cfg.Records, time.Since(start).Round(time.Millisecond), cfg.ZipfAlpha, cfg.Seed)
	actx, cancel = context.WithTimeout(ctx, time.Minute)
	// The loader's acks=1 returns before followers have every record, so
	// with a replication factor above 1 the high watermarks trail for a
	// moment: wait until they cover what was loaded, or the drain would
	// count as done short of it.
	bl, err := loadedBacklog(actx, adm, cfg.Topic, counts)
	var lead []int32
	if err == nil {
		lead = leaders(actx, adm, cfg.Topic, cfg.Partitions)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	var expect int64
	for _, n := range bl {
		expect += n
	}
	for p, n := range bl {
		fmt.Fprintf(out, "  partition %2d: %9d records (%5.2f%%), leader %d\n", p, n, 100*float64(n)/float64(max(expect, 1)), lead[p])
	}
	fmt.Fprintf(out, "draining with one %s share consumer, share.acquire.mode=%s, max.poll.records=%d (timeout %s)\n",
		cfg.Client, cfg.AcquireMode, cfg.MaxPollRecords, cfg.Timeout)

	spec := drainSpec{cfg: cfg, expect: expect}
	var o drainOutcome
	if cfg.Client == ClientJava {
		o, err = drainJava(ctx, spec)
	} else {
		o, err = profiled(cfg, func() (drainOutcome, error) { return drainWeir(ctx, spec) })
	}
	if err != nil && len(o.series.Samples) == 0 {
		return nil, err
	}
	sum := o.series.Summarize()
	if o.last > 0 {
		sum.FirstRecord, sum.LastRecord = o.first, o.last
	}
	res := &Result{
		Backlog: bl, Leaders: lead, Series: o.series, Summary: sum,
		Consumed: o.consumed, Distinct: o.distinct, Duplicates: o.duplicates,
		Drained: o.distinct >= expect,
	}
	if werr := writeOutputs(cfg, res); werr != nil {
		err = errors.Join(err, werr)
	}
	res.Summary.WriteText(out)
	fmt.Fprintf(out, "delivered:      %d (%d distinct of %d, %d duplicates)\n", res.Consumed, res.Distinct, expect, res.Duplicates)
	if res.CSV != "" {
		fmt.Fprintf(out, "wrote %s and %s\n", res.CSV, res.HTML)
	}
	if err == nil && !res.Drained {
		err = fmt.Errorf("drained %d of %d records before the %s timeout", res.Distinct, expect, cfg.Timeout)
	}
	return res, err
}

func writeOutputs(cfg Config, res *Result) error {
	if cfg.Out == "" {
		return nil
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	res.CSV = filepath.Join(cfg.Out, cfg.Name+".csv")
	res.HTML = filepath.Join(cfg.Out, cfg.Name+".html")
	if err := writeFile(res.CSV, func(w io.Writer) error { return WriteCSV(w, res.Series.Samples) }); err != nil {
		return err
	}
	rep := Report{
		Title: fmt.Sprintf("share drain: %s client, %s", cfg.Client, cfg.AcquireMode),
		Params: [][2]string{
			{"bootstrap", cfg.Bootstrap},
			{"client", cfg.Client},
			{"share.acquire.mode", cfg.AcquireMode},
			{"max.poll.records", strconv.Itoa(cfg.MaxPollRecords)},
			{"fetch.max.wait.ms", strconv.FormatInt(cfg.FetchMaxWait.Milliseconds(), 10)},
			{"records", strconv.FormatInt(cfg.Records, 10)},
			{"partitions", strconv.Itoa(cfg.Partitions)},
			{"replication factor", strconv.Itoa(cfg.ReplicationFactor)},
			{"Zipf alpha (seed)", fmt.Sprintf("%g (%d)", cfg.ZipfAlpha, cfg.Seed)},
			{"value bytes", strconv.Itoa(cfg.ValueSize)},
			{"sampling interval", cfg.SampleInterval.String()},
			{"topic / group", cfg.Topic + " / " + cfg.Group},
			{"broker configs for the run", joinConfigs(cfg.BrokerConfigs)},
			{"drained", fmt.Sprintf("%v (%d distinct, %d duplicates)", res.Drained, res.Distinct, res.Duplicates)},
		},
		Partitions: res.Backlog,
		Leaders:    res.Leaders,
		Summary:    res.Summary,
		Samples:    res.Series.Samples,
	}
	if err := writeFile(res.HTML, func(w io.Writer) error { return WriteHTML(w, rep) }); err != nil {
		return err
	}
	rec, err := json.MarshalIndent(newRunRecord(cfg, res), "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.Out, cfg.Name+".json"), append(rec, '\n'), 0o644)
}

func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
