package broker

import (
	"github.com/prometheus/client_golang/prometheus"

	"weir/internal/brokermetrics"
	"weir/internal/fetchsession"
	"weir/internal/group"
	"weir/internal/sharegroup"
)

// Collector exports the broker's state and counters to Prometheus
// (internal/brokermetrics), read at scrape time.
func (b *Broker) Collector() prometheus.Collector { return brokermetrics.New(metricsSource{b}) }

// metricsSource is what a scrape reads of the broker
// (brokermetrics.Source).
type metricsSource struct{ b *Broker }

func (s metricsSource) Replicas(fn func(topic string, partition int32, r brokermetrics.Replica)) {
	s.b.mu.RLock()
	var parts []*partition
	for _, t := range s.b.topics {
		parts = append(parts, localOnly(t.partitions)...)
	}
	s.b.mu.RUnlock()
	for _, p := range parts {
		fn(p.topic.name, p.index, (*scrapedReplica)(p))
	}
}

func (s metricsSource) LogDirOnline() bool                    { return s.b.logDir.Online() }
func (s metricsSource) ShareStats() sharegroup.Stats          { return s.b.ShareStats() }
func (s metricsSource) GroupStats() group.Stats               { return s.b.coord().Stats() }
func (s metricsSource) FetchSessionStats() fetchsession.Stats { return s.b.fetches.Stats() }

// scrapedReplica is a hosted partition as a scrape reads it
// (brokermetrics.Replica).
type scrapedReplica partition

func (p *scrapedReplica) Leader() bool          { return (*partition)(p).isLeader() }
func (p *scrapedReplica) LogEndOffset() int64   { return (*partition)(p).log().EndOffset() }
func (p *scrapedReplica) HighWatermark() int64  { return (*partition)(p).highWatermark() }
func (p *scrapedReplica) LogStartOffset() int64 { return (*partition)(p).log().StartOffset() }
func (p *scrapedReplica) LogSize() int64        { return (*partition)(p).log().Size() }
func (p *scrapedReplica) Fsyncs() int64         { return (*partition)(p).log().Fsyncs() }
