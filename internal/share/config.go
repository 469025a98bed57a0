package share

import (
	"fmt"
	"time"
)

// Defaults of Apache Kafka 4.3 (broker configs group.share.* and the group
// configs share.* that override them per group).
const (
	// DefaultRecordLockDuration is group.share.record.lock.duration.ms
	// (group config share.record.lock.duration.ms).
	DefaultRecordLockDuration = 30 * time.Second
	// DefaultDeliveryCountLimit is group.share.delivery.count.limit
	// (group config share.delivery.count.limit, 4.3+).
	DefaultDeliveryCountLimit = 5
	// DefaultMaxRecordLocks is group.share.partition.max.record.locks
	// (group config share.partition.max.record.locks, 4.3+): 2000 in 4.3
	// (it was 200 in 4.0).
	DefaultMaxRecordLocks = 2000
	// DefaultHeartbeatInterval is group.share.heartbeat.interval.ms.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultSessionTimeout is group.share.session.timeout.ms.
	DefaultSessionTimeout = 45 * time.Second
	// DefaultMaxGroupSize is group.share.max.size.
	DefaultMaxGroupSize = 200
)

// AcquireMode is ShareFetch v2's ShareAcquireMode (KIP-1206).
type AcquireMode int8

const (
	// BatchOptimized acquires whole log batches: MaxRecords is a soft cap
	// that the last batch may overshoot. Wire value 0, the default.
	BatchOptimized AcquireMode = 0
	// RecordLimit acquires at most MaxRecords records, splitting a log
	// batch if it must. Wire value 1.
	RecordLimit AcquireMode = 1
)

func (m AcquireMode) String() string {
	switch m {
	case BatchOptimized:
		return "batch_optimized"
	case RecordLimit:
		return "record_limit"
	}
	return fmt.Sprintf("AcquireMode(%d)", int8(m))
}

// AckType is one entry of an acknowledgement batch's AcknowledgeTypes.
type AckType int8

const (
	// AckGap marks an offset that is not a record (compacted away, a
	// control record); it is archived.
	AckGap AckType = 0
	// AckAccept marks a record processed: it is never delivered again.
	AckAccept AckType = 1
	// AckRelease hands a record back for redelivery (or archives it if it
	// reached the delivery count limit).
	AckRelease AckType = 2
	// AckReject marks a record unprocessable: it is archived.
	AckReject AckType = 3
	// AckRenew extends the acquisition lock without changing the state
	// (KIP-1222, ShareFetch/ShareAcknowledge v2).
	AckRenew AckType = 4
)

func (t AckType) String() string {
	switch t {
	case AckGap:
		return "gap"
	case AckAccept:
		return "accept"
	case AckRelease:
		return "release"
	case AckReject:
		return "reject"
	case AckRenew:
		return "renew"
	}
	return fmt.Sprintf("AckType(%d)", int8(t))
}

// Config holds the limits of one share partition. A zero field takes the
// Kafka default; SetConfig may change them while the partition runs (group
// configs are dynamic in Kafka).
type Config struct {
	// LockDuration is how long acquired records stay locked to a member
	// (share.record.lock.duration.ms). It is also the
	// AcquisitionLockTimeoutMs of ShareFetch and ShareAcknowledge
	// responses.
	LockDuration time.Duration
	// DeliveryCountLimit is how many times a record is delivered before
	// it is archived (share.delivery.count.limit).
	DeliveryCountLimit int16
	// MaxRecordLocks caps the records between the start offset and the
	// end offset (share.partition.max.record.locks). Records beyond the
	// end are not acquired while the window is full; released records
	// inside it still are.
	MaxRecordLocks int32
}

func (c Config) withDefaults() Config {
	if c.LockDuration <= 0 {
		c.LockDuration = DefaultRecordLockDuration
	}
	if c.DeliveryCountLimit <= 0 {
		c.DeliveryCountLimit = DefaultDeliveryCountLimit
	}
	if c.MaxRecordLocks <= 0 {
		c.MaxRecordLocks = DefaultMaxRecordLocks
	}
	return c
}

// throttleLimit is the delivery count from which Kafka (4.2+) hands out a
// record's batch in ever smaller pieces, so that one poisonous record does
// not drag a whole batch to the delivery count limit with it: half the
// limit rounded up, at least 2.
func (c Config) throttleLimit() int16 {
	t := (c.DeliveryCountLimit + 1) / 2
	if t < 2 {
		t = 2
	}
	return t
}
