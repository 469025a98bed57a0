package cleaner

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"weir/internal/log"
)

// fields parses "k=v k=v" into a map.
func fields(t testing.TB, line string) map[string]string {
	out := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("field %q is not key=value", f)
		}
		out[k] = v
	}
	return out
}

func num(t testing.TB, m map[string]string, key string, def int64) int64 {
	s, ok := m[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", key, s, err)
	}
	return n
}

func ratio(t testing.TB, m map[string]string, key string, def float64) float64 {
	s, ok := m[key]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", key, s, err)
	}
	return f
}

// TestPlanTranscripts runs testdata/plan.txt:
//
//	log <view fields>            a log's view; input lines are its closed segments
//	plan now= checkpoint= seen=  plan it (seen: truncations seen by the last round)
//	choose                       input lines: name ratio= cleanable= delay= min=
func TestPlanTranscripts(t *testing.T) {
	var view log.CleanerView
	var stable int64
	datadriven.RunTest(t, "testdata/plan.txt", func(t *testing.T, d *datadriven.TestData) string {
		args := map[string]string{}
		for _, a := range d.CmdArgs {
			args[a.Key] = strings.Join(a.Vals, ",")
		}
		switch d.Cmd {
		case "log":
			cfg := log.DefaultConfig()
			cfg.Compact = true
			cfg.Cleaning.MinCompactionLag = time.Duration(num(t, args, "min-lag", 0)) * time.Millisecond
			cfg.Cleaning.MaxCompactionLag = time.Duration(num(t, args, "max-lag", -1)) * time.Millisecond
			if cfg.Cleaning.MaxCompactionLag < 0 {
				cfg.Cleaning.MaxCompactionLag = -1
			}
			cfg.Cleaning.MinCleanableRatio = ratio(t, args, "min-ratio", 0.5)
			view = log.CleanerView{
				LogStart:      num(t, args, "start", 0),
				ActiveBase:    num(t, args, "active", 0),
				EndOffset:     num(t, args, "end", 0),
				RecoveryPoint: num(t, args, "rp", 1<<62),
				Truncations:   uint64(num(t, args, "truncations", 0)),
				TruncatedTo:   num(t, args, "truncated-to", 1<<62),
				Config:        cfg,
			}
			stable = num(t, args, "stable", 1<<62)
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				if line == "" {
					continue
				}
				f := fields(t, line)
				view.Segments = append(view.Segments, log.SegmentSummary{
					Base: num(t, f, "base", 0), Next: num(t, f, "next", 0), Bytes: num(t, f, "bytes", 0),
					MaxTimestamp: num(t, f, "max-ts", -1), FirstTimestamp: num(t, f, "first-ts", -1),
				})
			}
			return ""
		case "plan":
			c := Candidate{View: view, Checkpoint: num(t, args, "checkpoint", -1), SeenTruncations: uint64(num(t, args, "seen", 0)), Stable: stable}
			p := PlanLog(c, time.UnixMilli(num(t, args, "now", 0)))
			return fmt.Sprintf("first-dirty=%d first-uncleanable=%d reset=%v\nclean=%d cleanable=%d ratio=%.2f delay=%s\ncleanable=%v\n",
				p.FirstDirty, p.FirstUncleanable, p.ResetCheckpoint, p.CleanBytes, p.CleanableBytes, p.Ratio, p.CompactionDelay, p.Cleanable(view.Config.Cleaning))
		case "choose":
			var names []string
			var plans []Plan
			var cfgs []log.Cleaning
			for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
				name, rest, _ := strings.Cut(line, " ")
				f := fields(t, rest)
				names = append(names, name)
				plans = append(plans, Plan{Ratio: ratio(t, f, "ratio", 0), CleanableBytes: num(t, f, "cleanable", 0), CompactionDelay: time.Duration(num(t, f, "delay", 0)) * time.Millisecond})
				cfgs = append(cfgs, log.Cleaning{MinCleanableRatio: ratio(t, f, "min", 0.5)})
			}
			if i := Choose(plans, cfgs); i >= 0 {
				return names[i] + "\n"
			}
			return "none\n"
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}
