package brokermetrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"weir/internal/fetchsession"
	"weir/internal/group"
	"weir/internal/sharegroup"
)

// Source is the broker state a scrape reads.
type Source interface {
	// Replicas calls fn with every partition this node holds a replica
	// of (led or followed), by topic name and partition index.
	Replicas(fn func(topic string, partition int32, r Replica))
	// LogDirOnline reports whether the data directory is online.
	LogDirOnline() bool
	ShareStats() sharegroup.Stats
	GroupStats() group.Stats
	FetchSessionStats() fetchsession.Stats
}

// Replica is one hosted partition as a scrape reads it. Only Leader and
// LogEndOffset are read of a partition never written (log end offset
// 0).
type Replica interface {
	Leader() bool
	LogEndOffset() int64
	HighWatermark() int64
	LogStartOffset() int64
	LogSize() int64 // bytes in the partition's segments
	Fsyncs() int64  // data-file fsyncs of the partition's log
}

// Collector exports the broker's state and counters to Prometheus, read
// at scrape time: per partition the log end offset, high watermark, start
// offset and size; per share partition the KIP-932 counters (in flight,
// acquired, available, archived, lock expiries, redeliveries) and how long
// ShareFetch requests waited empty; the group coordinator's counters; the
// fetch session cache's.
type Collector struct{ src Source }

// New returns the collector of src.
func New(src Source) *Collector { return &Collector{src: src} }

var (
	partLabels  = []string{"topic", "partition"}
	shareLabels = []string{"group", "topic", "partition"}

	descHosted    = prometheus.NewDesc("weir_broker_partitions_hosted", "Partitions this broker holds a replica of.", nil, nil)
	descLed       = prometheus.NewDesc("weir_broker_partitions_led", "Partitions this broker leads.", nil, nil)
	descDirOff    = prometheus.NewDesc("weir_broker_log_dir_offline", "1 while the data directory is offline (a write or sync failed: a full or failing disk).", nil, nil)
	descLEO       = prometheus.NewDesc("weir_partition_log_end_offset", "Offset the next record of the partition will get.", partLabels, nil)
	descHW        = prometheus.NewDesc("weir_partition_high_watermark", "Offset below which records are visible to consumers.", partLabels, nil)
	descLogStart  = prometheus.NewDesc("weir_partition_log_start_offset", "First offset still in the partition's log.", partLabels, nil)
	descLogSize   = prometheus.NewDesc("weir_partition_log_size_bytes", "Bytes in the partition's segments.", partLabels, nil)
	descFsyncs    = prometheus.NewDesc("weir_partition_fsyncs_total", "Data-file fsyncs of the partition's log.", partLabels, nil)
	descInFlight  = prometheus.NewDesc("weir_share_partition_in_flight_records", "Records between the share-partition start and end offsets.", shareLabels, nil)
	descAcquired  = prometheus.NewDesc("weir_share_partition_acquired_records", "Records under an acquisition lock now.", shareLabels, nil)
	descAvailable = prometheus.NewDesc("weir_share_partition_available_records", "In-flight records waiting to be delivered again.", shareLabels, nil)
	descArchived  = prometheus.NewDesc("weir_share_partition_archived_records_total", "Records archived (rejected or past the delivery limit).", shareLabels, nil)
	descExpiries  = prometheus.NewDesc("weir_share_partition_lock_expiries_total", "Records whose acquisition lock expired.", shareLabels, nil)
	descRedeliv   = prometheus.NewDesc("weir_share_partition_redeliveries_total", "Records delivered again (delivery count above 1).", shareLabels, nil)
	descAcked     = prometheus.NewDesc("weir_share_partition_acknowledged_records_total", "Records accepted.", shareLabels, nil)
	descParked    = prometheus.NewDesc("weir_share_fetch_parked_total", "ShareFetch requests that found nothing to acquire and waited.", nil, nil)
	descParkedE   = prometheus.NewDesc("weir_share_fetch_parked_empty_total", "Parked ShareFetch requests that ended at MaxWaitMs with nothing.", nil, nil)
	descParkedS   = prometheus.NewDesc("weir_share_fetch_parked_seconds_total", "Time parked ShareFetch requests waited.", nil, nil)
	descRebal     = prometheus.NewDesc("weir_group_classic_rebalances_total", "Classic group generations completed.", nil, nil)
	descEpochs    = prometheus.NewDesc("weir_group_consumer_epoch_bumps_total", "KIP-848 group epoch increments (new target assignments).", nil, nil)
	descStreams   = prometheus.NewDesc("weir_group_streams_epoch_bumps_total", "KIP-1071 streams group epoch increments (new task assignments).", nil, nil)
	descExpired   = prometheus.NewDesc("weir_group_members_expired_total", "Group members removed after their session timed out.", nil, nil)
	descCommitted = prometheus.NewDesc("weir_group_offsets_committed_total", "Partitions whose offset was committed.", nil, nil)

	kindLabels     = []string{"kind"} // sessionless, full, incremental
	descSessions   = prometheus.NewDesc("weir_fetch_sessions", "Incremental fetch sessions cached (Kafka's NumIncrementalFetchSessions).", nil, nil)
	descSessParts  = prometheus.NewDesc("weir_fetch_session_partitions", "Partitions held by the cached fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).", nil, nil)
	descEvictions  = prometheus.NewDesc("weir_fetch_session_evictions_total", "Fetch sessions evicted to make room for another.", nil, nil)
	descFetchReqs  = prometheus.NewDesc("weir_fetch_requests_total", "Fetch requests admitted, by kind.", kindLabels, nil)
	descFetchNamed = prometheus.NewDesc("weir_fetch_request_partitions_total", "Partitions the Fetch requests named, by kind.", kindLabels, nil)
	descFetchReads = prometheus.NewDesc("weir_fetch_partition_reads_total", "Partition reads the Fetch requests made (a parked request woken reads only what changed), by kind.", kindLabels, nil)
	descFetchAns   = prometheus.NewDesc("weir_fetch_response_partitions_total", "Partitions the Fetch responses carried, by kind.", kindLabels, nil)
)

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descHosted, descLed, descDirOff, descLEO, descHW, descLogStart, descLogSize, descFsyncs, descInFlight, descAcquired, descAvailable,
		descArchived, descExpiries, descRedeliv, descAcked, descParked, descParkedE, descParkedS, descRebal, descEpochs, descStreams, descExpired, descCommitted,
		descSessions, descSessParts, descEvictions, descFetchReqs, descFetchNamed, descFetchReads, descFetchAns} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	hosted, led := 0, 0
	c.src.Replicas(func(topic string, partition int32, r Replica) {
		hosted++
		if r.Leader() {
			led++
		}
		leo := r.LogEndOffset()
		if leo == 0 {
			// Never written: nothing to watch, and at a million hosted
			// partitions their series alone made a scrape 100 MB.
			return
		}
		l := []string{topic, strconv.Itoa(int(partition))}
		gauge(descLEO, float64(leo), l...)
		gauge(descHW, float64(r.HighWatermark()), l...)
		gauge(descLogStart, float64(r.LogStartOffset()), l...)
		gauge(descLogSize, float64(r.LogSize()), l...)
		counter(descFsyncs, float64(r.Fsyncs()), l...)
	})
	gauge(descHosted, float64(hosted))
	gauge(descLed, float64(led))
	offline := 0.0
	if !c.src.LogDirOnline() {
		offline = 1
	}
	gauge(descDirOff, offline)
	ss := c.src.ShareStats()
	for _, sp := range ss.Partitions {
		l := []string{sp.Group, sp.Topic, strconv.Itoa(int(sp.Partition))}
		gauge(descInFlight, float64(sp.InFlight), l...)
		gauge(descAcquired, float64(sp.Acquired), l...)
		gauge(descAvailable, float64(sp.Available), l...)
		counter(descArchived, float64(sp.ArchivedTotal), l...)
		counter(descExpiries, float64(sp.LockExpiries), l...)
		counter(descRedeliv, float64(sp.Redeliveries), l...)
		counter(descAcked, float64(sp.AcknowledgedTotal), l...)
	}
	counter(descParked, float64(ss.Parked))
	counter(descParkedE, float64(ss.ParkedEmpty))
	counter(descParkedS, ss.ParkedTime.Seconds())
	gs := c.src.GroupStats()
	counter(descRebal, float64(gs.ClassicRebalances))
	counter(descEpochs, float64(gs.ConsumerEpochBumps))
	counter(descStreams, float64(gs.StreamsEpochBumps))
	counter(descExpired, float64(gs.MembersExpired))
	counter(descCommitted, float64(gs.OffsetsCommitted))
	fs := c.src.FetchSessionStats()
	gauge(descSessions, float64(fs.Sessions))
	gauge(descSessParts, float64(fs.Partitions))
	counter(descEvictions, float64(fs.Evictions))
	for _, k := range []fetchsession.Kind{fetchsession.Sessionless, fetchsession.Full, fetchsession.Incremental} {
		counter(descFetchReqs, float64(fs.Requests[k]), k.String())
		counter(descFetchNamed, float64(fs.Requested[k]), k.String())
		counter(descFetchReads, float64(fs.Read[k]), k.String())
		counter(descFetchAns, float64(fs.Answered[k]), k.String())
	}
}
