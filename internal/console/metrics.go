package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics reads what a broker counts about itself and Kafka's protocol
// does not carry: bytes and requests served, share-partition state and
// ShareFetch waits. Scrape is called only while someone watches a page
// that shows them.
type Metrics interface {
	Scrape(ctx context.Context, broker int32) (Sample, error)
}

// ErrNoMetrics is a broker whose metrics the console was not told how to
// reach.
var ErrNoMetrics = errors.New("console: no metrics endpoint known for this broker")

// Sample is one scrape of a broker's counters (totals since it started)
// and gauges.
type Sample struct {
	BytesIn, BytesOut float64
	Requests          float64
	Shares            map[ShareKey]ShareSample
	// ShareFetch requests that found nothing and waited: how many, how
	// many ended empty at their MaxWaitMs, and the seconds they waited.
	Parked, ParkedEmpty, ParkedSeconds float64
}

// ShareKey names a share partition.
type ShareKey struct {
	Group string
	TP
}

// ShareSample is one share partition on its leader.
type ShareSample struct {
	InFlight, Acquired, Available    float64 // gauges
	Archived, Redeliveries, Expiries float64 // totals
	Acknowledged                     float64
}

// The metric names read (as internal/server and internal/broker export
// them).
const (
	mBytesIn      = "weir_server_bytes_in_total"
	mBytesOut     = "weir_server_bytes_out_total"
	mRequests     = "weir_server_requests_total"
	mInFlight     = "weir_share_partition_in_flight_records"
	mAcquired     = "weir_share_partition_acquired_records"
	mAvailable    = "weir_share_partition_available_records"
	mArchived     = "weir_share_partition_archived_records_total"
	mExpiries     = "weir_share_partition_lock_expiries_total"
	mRedeliveries = "weir_share_partition_redeliveries_total"
	mAcked        = "weir_share_partition_acknowledged_records_total"
	mParked       = "weir_share_fetch_parked_total"
	mParkedEmpty  = "weir_share_fetch_parked_empty_total"
	mParkedSecs   = "weir_share_fetch_parked_seconds_total"
)

// sampleOf reads the families a Sample needs; others are ignored.
func sampleOf(fams map[string]*dto.MetricFamily) Sample {
	s := Sample{Shares: map[ShareKey]ShareSample{}}
	sum := func(name string) float64 {
		var v float64
		if f := fams[name]; f != nil {
			for _, m := range f.Metric {
				v += metricValue(m)
			}
		}
		return v
	}
	s.BytesIn, s.BytesOut, s.Requests = sum(mBytesIn), sum(mBytesOut), sum(mRequests)
	s.Parked, s.ParkedEmpty, s.ParkedSeconds = sum(mParked), sum(mParkedEmpty), sum(mParkedSecs)
	for name, set := range map[string]func(*ShareSample, float64){
		mInFlight:     func(x *ShareSample, v float64) { x.InFlight = v },
		mAcquired:     func(x *ShareSample, v float64) { x.Acquired = v },
		mAvailable:    func(x *ShareSample, v float64) { x.Available = v },
		mArchived:     func(x *ShareSample, v float64) { x.Archived = v },
		mExpiries:     func(x *ShareSample, v float64) { x.Expiries = v },
		mRedeliveries: func(x *ShareSample, v float64) { x.Redeliveries = v },
		mAcked:        func(x *ShareSample, v float64) { x.Acknowledged = v },
	} {
		f := fams[name]
		if f == nil {
			continue
		}
		for _, m := range f.Metric {
			k, ok := shareKeyOf(m)
			if !ok {
				continue
			}
			x := s.Shares[k]
			set(&x, metricValue(m))
			s.Shares[k] = x
		}
	}
	return s
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func shareKeyOf(m *dto.Metric) (ShareKey, bool) {
	var k ShareKey
	var okG, okT, okP bool
	for _, l := range m.Label {
		switch l.GetName() {
		case "group":
			k.Group, okG = l.GetValue(), true
		case "topic":
			k.Topic, okT = l.GetValue(), true
		case "partition":
			p, err := strconv.ParseInt(l.GetValue(), 10, 32)
			if err != nil || p < 0 {
				return k, false
			}
			k.Partition, okP = int32(p), true
		}
	}
	return k, okG && okT && okP
}

// maxScrapeBytes bounds one scrape read over HTTP.
const maxScrapeBytes = 64 << 20

// parseExposition reads Prometheus's text format.
func parseExposition(r io.Reader) (Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(io.LimitReader(r, maxScrapeBytes))
	if err != nil {
		return Sample{}, fmt.Errorf("console: reading metrics: %w", err)
	}
	return sampleOf(fams), nil
}

// Scraper reads the local broker's metrics from its registry in process
// and other brokers' over HTTP from their /metrics endpoints.
type Scraper struct {
	Local    int32
	Gatherer prometheus.Gatherer // the local broker's registry; nil: none
	// URLs are other brokers' metrics endpoints (http://host:port/metrics).
	URLs   map[int32]string
	Client *http.Client
}

// Scrape implements Metrics.
func (s *Scraper) Scrape(ctx context.Context, broker int32) (Sample, error) {
	if broker == s.Local && s.Gatherer != nil {
		fams, err := s.Gatherer.Gather()
		if err != nil && len(fams) == 0 {
			return Sample{}, err
		}
		m := make(map[string]*dto.MetricFamily, len(fams))
		for _, f := range fams {
			m[f.GetName()] = f
		}
		return sampleOf(m), nil
	}
	url, ok := s.URLs[broker]
	if !ok {
		return Sample{}, ErrNoMetrics
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Sample{}, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	hc := s.Client
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("console: %s answered %s", url, resp.Status)
	}
	return parseExposition(resp.Body)
}
