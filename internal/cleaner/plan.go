package cleaner

import (
	"time"

	"weir/internal/log"
)

// The planner: which part of a log a round may clean, how dirty the log
// is, and which log to clean next. Pure functions of the log's view, the
// cleaner's checkpoint and the clock, as Kafka's LogCleanerManager
// decides them (cleanableOffsets, LogToClean, grabFilthiestCompactedLog).

// Candidate is one compacted log as the planner sees it.
type Candidate struct {
	View log.CleanerView
	// Checkpoint is the first dirty offset the cleaner recorded for the
	// log (the end of its last round), -1 when none.
	Checkpoint int64
	// SeenTruncations is View.Truncations as of the last round; a
	// truncation since then may have cut below the checkpoint.
	SeenTruncations uint64
	// Stable bounds cleaning from above: the high watermark, or the last
	// stable offset once transactions exist. Records at or past it may
	// still be truncated or aborted.
	Stable int64
}

// Plan is what the planner decided for one log.
type Plan struct {
	// FirstDirty is where the dirty part starts: records below it were
	// deduplicated by earlier rounds.
	FirstDirty int64
	// FirstUncleanable is the base of the first segment a round may not
	// touch (the active segment, or the first one holding records past
	// Stable, the recovery point or min.compaction.lag.ms).
	FirstUncleanable int64
	// ResetCheckpoint: the recorded checkpoint was out of the log's range
	// (or a truncation cut below it) and FirstDirty replaced it.
	ResetCheckpoint bool
	CleanBytes      int64 // segments below FirstDirty
	CleanableBytes  int64 // closed segments in [FirstDirty, FirstUncleanable)
	Ratio           float64
	// CompactionDelay is how long past max.compaction.lag.ms the oldest
	// dirty segment is; positive means clean now whatever the ratio.
	CompactionDelay time.Duration
}

// PlanLog plans one log.
func PlanLog(c Candidate, now time.Time) Plan {
	v := &c.View
	p := Plan{FirstDirty: v.LogStart}
	switch {
	case c.Checkpoint < 0:
	case c.Checkpoint < v.LogStart, c.Checkpoint > v.EndOffset:
		p.ResetCheckpoint = true
	default:
		p.FirstDirty = c.Checkpoint
	}
	if v.Truncations != c.SeenTruncations && v.TruncatedTo < p.FirstDirty {
		p.FirstDirty = max(v.TruncatedTo, v.LogStart)
		p.ResetCheckpoint = true
	}
	cfg := v.Config.Cleaning
	bound := min(v.ActiveBase, c.Stable, v.RecoveryPoint)
	nowMs := now.UnixMilli()
	for _, s := range v.Segments {
		if s.Next <= p.FirstDirty {
			continue
		}
		if cfg.MinCompactionLag > 0 && s.MaxTimestamp > nowMs-cfg.MinCompactionLag.Milliseconds() {
			bound = min(bound, s.Base)
			break
		}
	}
	bound = max(bound, p.FirstDirty)
	// Round down to the segment holding the bound: rounds clean whole
	// segments.
	p.FirstUncleanable = v.ActiveBase
	for _, s := range v.Segments {
		if s.Next > bound {
			p.FirstUncleanable = s.Base
			break
		}
	}
	earliest := int64(-1)
	for _, s := range v.Segments {
		if s.Base < p.FirstDirty {
			p.CleanBytes += s.Bytes
		}
		if s.Next > p.FirstDirty && s.Base < p.FirstUncleanable {
			p.CleanableBytes += s.Bytes
		}
		if s.Next > p.FirstDirty && s.FirstTimestamp > 0 && (earliest < 0 || s.FirstTimestamp < earliest) {
			earliest = s.FirstTimestamp
		}
	}
	if total := p.CleanBytes + p.CleanableBytes; total > 0 {
		p.Ratio = float64(p.CleanableBytes) / float64(total)
	}
	if cfg.MaxCompactionLag >= 0 && earliest >= 0 {
		if until := nowMs - cfg.MaxCompactionLag.Milliseconds(); earliest < until {
			p.CompactionDelay = time.Duration(until-earliest) * time.Millisecond
		}
	}
	return p
}

// Cleanable reports whether a round should clean the log now: it is
// dirtier than min.cleanable.dirty.ratio, or max.compaction.lag.ms has
// passed for data it can clean.
func (p Plan) Cleanable(cfg log.Cleaning) bool {
	return p.CleanableBytes > 0 && (p.CompactionDelay > 0 || p.Ratio > cfg.MinCleanableRatio)
}

// Choose returns the index of the log to clean next among cleanable
// ones: the dirtiest, as Kafka picks. -1 when none is cleanable.
func Choose(plans []Plan, cfgs []log.Cleaning) int {
	best := -1
	for i, p := range plans {
		if !p.Cleanable(cfgs[i]) {
			continue
		}
		if best < 0 || p.Ratio > plans[best].Ratio {
			best = i
		}
	}
	return best
}
