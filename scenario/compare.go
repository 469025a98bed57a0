package scenario

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// RunRecord is the machine-readable outcome of one drain, written next to
// its CSV as <name>.json so that several runs can be compared later
// (WriteComparison) without parsing terminal output.
type RunRecord struct {
	Name           string            `json:"name"`
	Client         string            `json:"client"`
	AcquireMode    string            `json:"acquire_mode"`
	Bootstrap      string            `json:"bootstrap"`
	Records        int64             `json:"records"`
	Partitions     int               `json:"partitions"`
	ZipfAlpha      float64           `json:"zipf_alpha"`
	Seed           uint64            `json:"seed"`
	MaxPollRecords int               `json:"max_poll_records"`
	FetchMaxWaitMs int64             `json:"fetch_max_wait_ms"`
	TimeoutS       float64           `json:"timeout_s"`
	SampleS        float64           `json:"sample_interval_s"`
	Backlog        []int64           `json:"backlog"`
	Leaders        []int32           `json:"leaders"`
	BrokerConfigs  map[string]string `json:"broker_configs,omitempty"`
	Consumed       int64             `json:"consumed"`
	Distinct       int64             `json:"distinct"`
	Duplicates     int64             `json:"duplicates"`
	Drained        bool              `json:"drained"`
	PeakRate       float64           `json:"peak_rate"`
	MinAfterPeak   float64           `json:"min_after_peak"`
	FirstRecordS   float64           `json:"first_record_s"`
	DrainS         float64           `json:"drain_s"`
	Plateaus       []PlateauRecord   `json:"plateaus"`
}

// PlateauRecord is a Plateau in seconds.
type PlateauRecord struct {
	FromS  float64 `json:"from_s"`
	ToS    float64 `json:"to_s"`
	Median float64 `json:"median"`
}

func newRunRecord(cfg Config, res *Result) RunRecord {
	r := RunRecord{
		Name: cfg.Name, Client: cfg.Client, AcquireMode: cfg.AcquireMode, Bootstrap: cfg.Bootstrap,
		Records: cfg.Records, Partitions: cfg.Partitions, ZipfAlpha: cfg.ZipfAlpha, Seed: cfg.Seed,
		MaxPollRecords: cfg.MaxPollRecords, FetchMaxWaitMs: cfg.FetchMaxWait.Milliseconds(),
		TimeoutS: cfg.Timeout.Seconds(), SampleS: cfg.SampleInterval.Seconds(), Backlog: res.Backlog, Leaders: res.Leaders, BrokerConfigs: cfg.BrokerConfigs,
		Consumed: res.Consumed, Distinct: res.Distinct, Duplicates: res.Duplicates, Drained: res.Drained,
		PeakRate: res.Summary.Peak, MinAfterPeak: res.Summary.MinAfter,
		FirstRecordS: res.Summary.FirstRecord.Seconds(), DrainS: res.Summary.Drain().Seconds(),
	}
	for _, p := range res.Summary.Plateaus {
		r.Plateaus = append(r.Plateaus, PlateauRecord{p.From.Seconds(), p.To.Seconds(), p.Median})
	}
	return r
}

// ComparedRun is one run in a comparison: a label, its record and its
// samples. LoadRun reads one from the files share-drain wrote.
type ComparedRun struct {
	Label   string
	Record  RunRecord
	Samples []Sample
}

// LoadRun reads <stem>.json and <stem>.csv; the plateaus come from the
// CSV.
func LoadRun(label, stem string) (ComparedRun, error) {
	run := ComparedRun{Label: label}
	b, err := os.ReadFile(stem + ".json")
	if err != nil {
		return run, err
	}
	if err := json.Unmarshal(b, &run.Record); err != nil {
		return run, fmt.Errorf("%s.json: %w", stem, err)
	}
	run.Samples, err = readCSVFile(stem + ".csv")
	if err != nil {
		return run, err
	}
	// Plateaus are recomputed from the samples, so that runs recorded
	// before a change to the plateau rule read the same as new ones.
	sum := (&Series{Samples: run.Samples}).Summarize()
	run.Record.Plateaus = nil
	for _, p := range sum.Plateaus {
		run.Record.Plateaus = append(run.Record.Plateaus, PlateauRecord{p.From.Seconds(), p.To.Seconds(), p.Median})
	}
	return run, nil
}

func readCSVFile(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCSV(f)
}

// Comparison is a markdown page comparing runs against a reference.
type Comparison struct {
	Title     string
	Setup     string // free text under the title: cluster, machine, command
	Reference int    // index in Runs of the run the drain-time ratio divides by; -1 for none
	Runs      []ComparedRun
	// ChartPrefix names the chart files, relative to the markdown file:
	// <ChartPrefix>-rate.svg and <ChartPrefix>-rate-log.svg.
	ChartPrefix string
}

// WriteComparison writes the markdown summary table (peak, minimum after
// the peak, drain time, ratio to the reference, records drained) and the
// two charts of every run's rate, into dir. A run that hit its timeout shows
// its drain time as "> timeout" and the ratio as a lower bound.
func WriteComparison(dir, mdName string, c Comparison) error {
	series := make([]ChartSeries, len(c.Runs))
	for i, r := range c.Runs {
		series[i] = ChartSeries{Name: r.Label, Samples: r.Samples}
	}
	charts := map[string]string{
		c.ChartPrefix + "-rate.svg":     RateChart(series, ChartOptions{Title: c.Title + ": records/s", Width: 1000, Height: 420}),
		c.ChartPrefix + "-rate-log.svg": RateChart(series, ChartOptions{Title: c.Title + ": records/s, log scale", Width: 1000, Height: 420, Log: true}),
	}
	for name, svg := range charts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(svg), 0o644); err != nil {
			return err
		}
	}
	return writeFile(filepath.Join(dir, mdName), func(w io.Writer) error { return c.writeMarkdown(w) })
}

func (c Comparison) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", c.Title)
	if c.Setup != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(c.Setup))
	}
	b.WriteString("| run | client | share.acquire.mode | peak rec/s | min after peak rec/s | drain time | × reference | drained | plateaus (median rec/s) |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---|---|\n")
	var ref float64
	if c.Reference >= 0 && c.Reference < len(c.Runs) {
		ref = c.Runs[c.Reference].Record.DrainS
	}
	for i, r := range c.Runs {
		rec := r.Record
		drain := fmt.Sprintf("%.2f s", rec.DrainS)
		if rec.DrainS >= 10 {
			drain = fmt.Sprintf("%.1f s", rec.DrainS)
		}
		bound := ""
		if !rec.Drained {
			drain = "> " + drain
			bound = "> "
		}
		ratio := "–"
		switch {
		case i == c.Reference:
			ratio = "1 (reference)"
		case ref > 0:
			ratio = fmt.Sprintf("%s%.2f", bound, rec.DrainS/ref)
		}
		var plats []string
		for _, p := range rec.Plateaus {
			plats = append(plats, fmt.Sprintf("%.0f (%.1f–%.1f s)", p.Median, p.FromS, p.ToS))
		}
		drained := fmt.Sprintf("%d of %d", rec.Distinct, sum(rec.Backlog))
		if rec.Duplicates > 0 {
			drained += fmt.Sprintf(", %d duplicates", rec.Duplicates)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s |\n",
			r.Label, rec.Client, rec.AcquireMode, rec.PeakRate, rec.MinAfterPeak, drain, ratio, drained, strings.Join(plats, ", "))
	}
	fmt.Fprintf(&b, "\n![rate over time](%s-rate.svg)\n\n![rate over time, log scale](%s-rate-log.svg)\n\n", c.ChartPrefix, c.ChartPrefix)
	b.WriteString("Drain time runs from the first to the last record delivered (the group join is left out); " +
		"\"min after peak\" is the lowest rate over one sampling interval between the peak and the last full interval; " +
		"plateaus are runs of 5 samples or more within a factor 1.5 (of 3 or more 20-second sums when a drain lasts over two minutes). Per-run CSV and HTML pages sit next to this file " +
		"(see the scenario package docs for how they are measured).\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}
