package brokermetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"weir/internal/fetchsession"
	"weir/internal/group"
	"weir/internal/share"
	"weir/internal/sharegroup"
)

// fakeReplica is a hosted partition; unwritten says that only Leader
// and LogEndOffset may be read of it.
type fakeReplica struct {
	t                           *testing.T
	leader                      bool
	leo, hw, start, size, syncs int64
}

func (r fakeReplica) Leader() bool        { return r.leader }
func (r fakeReplica) LogEndOffset() int64 { return r.leo }
func (r fakeReplica) read(v int64) int64 {
	if r.leo == 0 {
		r.t.Error("a scrape read more than the log end offset of a partition never written")
	}
	return v
}
func (r fakeReplica) HighWatermark() int64  { return r.read(r.hw) }
func (r fakeReplica) LogStartOffset() int64 { return r.read(r.start) }
func (r fakeReplica) LogSize() int64        { return r.read(r.size) }
func (r fakeReplica) Fsyncs() int64         { return r.read(r.syncs) }

type fakeSource struct {
	t       *testing.T
	offline bool
}

func (s fakeSource) Replicas(fn func(string, int32, Replica)) {
	fn("orders", 0, fakeReplica{t: s.t, leader: true, leo: 100, hw: 90, start: 10, size: 4096, syncs: 7})
	fn("orders", 1, fakeReplica{t: s.t, leo: 5, hw: 5, start: 0, size: 512, syncs: 1})
	fn("idle", 0, fakeReplica{t: s.t, leader: true})
}

func (s fakeSource) LogDirOnline() bool { return !s.offline }

func (fakeSource) ShareStats() sharegroup.Stats {
	return sharegroup.Stats{
		Partitions: []sharegroup.PartitionStats{{Group: "g", Topic: "orders", Partition: 1, Stats: share.Stats{
			InFlight: 11, Acquired: 12, Available: 13, ArchivedTotal: 14, LockExpiries: 15, Redeliveries: 16, AcknowledgedTotal: 17}}},
		Parked: 21, ParkedEmpty: 22, ParkedTime: 1500 * time.Millisecond,
	}
}

func (fakeSource) GroupStats() group.Stats {
	return group.Stats{ClassicRebalances: 31, ConsumerEpochBumps: 32, MembersExpired: 33, OffsetsCommitted: 34, StreamsEpochBumps: 35}
}

func (fakeSource) FetchSessionStats() fetchsession.Stats {
	var s fetchsession.Stats
	s.Sessions, s.Partitions, s.Evictions = 41, 42, 43
	for k, base := range []uint64{100, 200, 300} {
		s.Requests[k], s.Requested[k], s.Read[k], s.Answered[k] = base+1, base+2, base+3, base+4
	}
	return s
}

const wantBroker = `
# HELP weir_broker_partitions_hosted Partitions this broker holds a replica of.
# TYPE weir_broker_partitions_hosted gauge
weir_broker_partitions_hosted 3
# HELP weir_broker_partitions_led Partitions this broker leads.
# TYPE weir_broker_partitions_led gauge
weir_broker_partitions_led 2
# HELP weir_broker_log_dir_offline 1 while the data directory is offline (a write or sync failed: a full or failing disk).
# TYPE weir_broker_log_dir_offline gauge
weir_broker_log_dir_offline 1
`

const wantPartitions = `
# HELP weir_partition_log_end_offset Offset the next record of the partition will get.
# TYPE weir_partition_log_end_offset gauge
weir_partition_log_end_offset{partition="0",topic="orders"} 100
weir_partition_log_end_offset{partition="1",topic="orders"} 5
# HELP weir_partition_high_watermark Offset below which records are visible to consumers.
# TYPE weir_partition_high_watermark gauge
weir_partition_high_watermark{partition="0",topic="orders"} 90
weir_partition_high_watermark{partition="1",topic="orders"} 5
# HELP weir_partition_log_start_offset First offset still in the partition's log.
# TYPE weir_partition_log_start_offset gauge
weir_partition_log_start_offset{partition="0",topic="orders"} 10
weir_partition_log_start_offset{partition="1",topic="orders"} 0
# HELP weir_partition_log_size_bytes Bytes in the partition's segments.
# TYPE weir_partition_log_size_bytes gauge
weir_partition_log_size_bytes{partition="0",topic="orders"} 4096
weir_partition_log_size_bytes{partition="1",topic="orders"} 512
# HELP weir_partition_fsyncs_total Data-file fsyncs of the partition's log.
# TYPE weir_partition_fsyncs_total counter
weir_partition_fsyncs_total{partition="0",topic="orders"} 7
weir_partition_fsyncs_total{partition="1",topic="orders"} 1
`

const wantShares = `
# HELP weir_share_partition_in_flight_records Records between the share-partition start and end offsets.
# TYPE weir_share_partition_in_flight_records gauge
weir_share_partition_in_flight_records{group="g",partition="1",topic="orders"} 11
# HELP weir_share_partition_acquired_records Records under an acquisition lock now.
# TYPE weir_share_partition_acquired_records gauge
weir_share_partition_acquired_records{group="g",partition="1",topic="orders"} 12
# HELP weir_share_partition_available_records In-flight records waiting to be delivered again.
# TYPE weir_share_partition_available_records gauge
weir_share_partition_available_records{group="g",partition="1",topic="orders"} 13
# HELP weir_share_partition_archived_records_total Records archived (rejected or past the delivery limit).
# TYPE weir_share_partition_archived_records_total counter
weir_share_partition_archived_records_total{group="g",partition="1",topic="orders"} 14
# HELP weir_share_partition_lock_expiries_total Records whose acquisition lock expired.
# TYPE weir_share_partition_lock_expiries_total counter
weir_share_partition_lock_expiries_total{group="g",partition="1",topic="orders"} 15
# HELP weir_share_partition_redeliveries_total Records delivered again (delivery count above 1).
# TYPE weir_share_partition_redeliveries_total counter
weir_share_partition_redeliveries_total{group="g",partition="1",topic="orders"} 16
# HELP weir_share_partition_acknowledged_records_total Records accepted.
# TYPE weir_share_partition_acknowledged_records_total counter
weir_share_partition_acknowledged_records_total{group="g",partition="1",topic="orders"} 17
# HELP weir_share_fetch_parked_total ShareFetch requests that found nothing to acquire and waited.
# TYPE weir_share_fetch_parked_total counter
weir_share_fetch_parked_total 21
# HELP weir_share_fetch_parked_empty_total Parked ShareFetch requests that ended at MaxWaitMs with nothing.
# TYPE weir_share_fetch_parked_empty_total counter
weir_share_fetch_parked_empty_total 22
# HELP weir_share_fetch_parked_seconds_total Time parked ShareFetch requests waited.
# TYPE weir_share_fetch_parked_seconds_total counter
weir_share_fetch_parked_seconds_total 1.5
`

const wantGroups = `
# HELP weir_group_classic_rebalances_total Classic group generations completed.
# TYPE weir_group_classic_rebalances_total counter
weir_group_classic_rebalances_total 31
# HELP weir_group_consumer_epoch_bumps_total KIP-848 group epoch increments (new target assignments).
# TYPE weir_group_consumer_epoch_bumps_total counter
weir_group_consumer_epoch_bumps_total 32
# HELP weir_group_members_expired_total Group members removed after their session timed out.
# TYPE weir_group_members_expired_total counter
weir_group_members_expired_total 33
# HELP weir_group_offsets_committed_total Partitions whose offset was committed.
# TYPE weir_group_offsets_committed_total counter
weir_group_offsets_committed_total 34
# HELP weir_group_streams_epoch_bumps_total KIP-1071 streams group epoch increments (new task assignments).
# TYPE weir_group_streams_epoch_bumps_total counter
weir_group_streams_epoch_bumps_total 35
`

const wantFetches = `
# HELP weir_fetch_sessions Incremental fetch sessions cached (Kafka's NumIncrementalFetchSessions).
# TYPE weir_fetch_sessions gauge
weir_fetch_sessions 41
# HELP weir_fetch_session_partitions Partitions held by the cached fetch sessions (Kafka's NumIncrementalFetchPartitionsCached).
# TYPE weir_fetch_session_partitions gauge
weir_fetch_session_partitions 42
# HELP weir_fetch_session_evictions_total Fetch sessions evicted to make room for another.
# TYPE weir_fetch_session_evictions_total counter
weir_fetch_session_evictions_total 43
# HELP weir_fetch_requests_total Fetch requests admitted, by kind.
# TYPE weir_fetch_requests_total counter
weir_fetch_requests_total{kind="sessionless"} 101
weir_fetch_requests_total{kind="full"} 201
weir_fetch_requests_total{kind="incremental"} 301
# HELP weir_fetch_request_partitions_total Partitions the Fetch requests named, by kind.
# TYPE weir_fetch_request_partitions_total counter
weir_fetch_request_partitions_total{kind="sessionless"} 102
weir_fetch_request_partitions_total{kind="full"} 202
weir_fetch_request_partitions_total{kind="incremental"} 302
# HELP weir_fetch_partition_reads_total Partition reads the Fetch requests made (a parked request woken reads only what changed), by kind.
# TYPE weir_fetch_partition_reads_total counter
weir_fetch_partition_reads_total{kind="sessionless"} 103
weir_fetch_partition_reads_total{kind="full"} 203
weir_fetch_partition_reads_total{kind="incremental"} 303
# HELP weir_fetch_response_partitions_total Partitions the Fetch responses carried, by kind.
# TYPE weir_fetch_response_partitions_total counter
weir_fetch_response_partitions_total{kind="sessionless"} 104
weir_fetch_response_partitions_total{kind="full"} 204
weir_fetch_response_partitions_total{kind="incremental"} 304
`

// Every metric family, with the names docs and the console use, reads
// its value from the Source; a partition never written has no series.
func TestCollectorFamilies(t *testing.T) {
	c := New(fakeSource{t: t, offline: true})
	want := wantBroker + wantPartitions + wantShares + wantGroups + wantFetches
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if n, d := testutil.CollectAndCount(c), strings.Count(want, "# TYPE"); n != strings.Count(want, "\nweir_") || d != 30 {
		t.Fatalf("%d series, %d families", n, d)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

func TestLogDirOnline(t *testing.T) {
	want := strings.Replace(wantBroker, "\nweir_broker_log_dir_offline 1\n", "\nweir_broker_log_dir_offline 0\n", 1)
	if err := testutil.CollectAndCompare(New(fakeSource{t: t}), strings.NewReader(want),
		"weir_broker_partitions_hosted", "weir_broker_partitions_led", "weir_broker_log_dir_offline"); err != nil {
		t.Fatal(err)
	}
}
