package cleaner

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector exports the cleaner's state to Prometheus, read at scrape
// time: rounds, bytes read and written, the throttle's sleep, and per
// compacted partition its dirty ratio (as last planned) and the time
// since its last round (since it was added, before the first).
func (c *Cleaner) Collector() prometheus.Collector { return collector{c} }

type collector struct{ c *Cleaner }

var (
	partLabels      = []string{"topic", "partition"}
	descRuns        = prometheus.NewDesc("weir_cleaner_runs_total", "Cleaning rounds completed.", nil, nil)
	descPartRuns    = prometheus.NewDesc("weir_cleaner_partition_runs_total", "Cleaning rounds completed for the partition.", partLabels, nil)
	descRead        = prometheus.NewDesc("weir_cleaner_bytes_read_total", "Bytes the cleaner read from segments.", nil, nil)
	descWritten     = prometheus.NewDesc("weir_cleaner_bytes_written_total", "Bytes the cleaner wrote to cleaned segments.", nil, nil)
	descThrottled   = prometheus.NewDesc("weir_cleaner_throttled_seconds_total", "Time the cleaner slept to stay under log.cleaner.io.max.bytes.per.second.", nil, nil)
	descDirty       = prometheus.NewDesc("weir_cleaner_dirty_ratio", "Share of the partition's log not cleaned yet, as last planned.", partLabels, nil)
	descMaxDirty    = prometheus.NewDesc("weir_cleaner_max_dirty_ratio", "Dirty ratio of the dirtiest compacted partition, as last planned.", nil, nil)
	descSinceClean  = prometheus.NewDesc("weir_cleaner_seconds_since_last_clean", "Seconds since the partition's last cleaning round (or since the cleaner was given it).", partLabels, nil)
	descSinceLook   = prometheus.NewDesc("weir_cleaner_seconds_since_last_run", "Seconds since the cleaner last looked for a dirty log.", nil, nil)
	descUncleanable = prometheus.NewDesc("weir_cleaner_uncleanable_partitions", "Partitions the cleaner stopped cleaning after an error.", nil, nil)
)

func (k collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRuns, descPartRuns, descRead, descWritten, descThrottled, descDirty, descMaxDirty, descSinceClean, descSinceLook, descUncleanable} {
		ch <- d
	}
}

func (k collector) Collect(ch chan<- prometheus.Metric) {
	c := k.c
	now := c.now()
	c.throttle.mu.Lock()
	slept := c.throttle.slept
	c.throttle.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	uncleanable := 0
	for tp, p := range c.parts {
		if p.uncleanable {
			uncleanable++
		}
		if !p.compact {
			continue
		}
		l := []string{tp.Topic, strconv.Itoa(int(tp.Partition))}
		ch <- prometheus.MustNewConstMetric(descPartRuns, prometheus.CounterValue, float64(p.runs), l...)
		ch <- prometheus.MustNewConstMetric(descDirty, prometheus.GaugeValue, p.ratio, l...)
		ch <- prometheus.MustNewConstMetric(descSinceClean, prometheus.GaugeValue, now.Sub(p.since).Seconds(), l...)
	}
	ch <- prometheus.MustNewConstMetric(descRuns, prometheus.CounterValue, float64(c.runs))
	ch <- prometheus.MustNewConstMetric(descRead, prometheus.CounterValue, float64(c.bytesRead.Load()))
	ch <- prometheus.MustNewConstMetric(descWritten, prometheus.CounterValue, float64(c.bytesWritten.Load()))
	ch <- prometheus.MustNewConstMetric(descThrottled, prometheus.CounterValue, slept.Seconds())
	ch <- prometheus.MustNewConstMetric(descMaxDirty, prometheus.GaugeValue, c.maxRatio)
	ch <- prometheus.MustNewConstMetric(descSinceLook, prometheus.GaugeValue, now.Sub(c.lastLook).Seconds())
	ch <- prometheus.MustNewConstMetric(descUncleanable, prometheus.GaugeValue, float64(uncleanable))
}
