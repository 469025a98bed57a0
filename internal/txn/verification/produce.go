package verification

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "weir/internal/log"
	"weir/internal/producer"
	"weir/internal/txn"
	"weir/internal/txn/coordinator"
)

// Host is the node as Produce sees it.
type Host interface {
	// Partition is partition i of a Produce request's topic, named by id
	// (Produce v13+) or by name, when this node leads it; false when the
	// topic is unknown or internal or the partition is not led here (the
	// handler refuses those batches without asking anyone).
	Partition(topic string, id [16]byte, byID bool, i int32) (Partition, bool)
}

// Partition is a partition led here. The broker's partitions implement
// it; Produce's answer is keyed by them.
type Partition interface {
	// TopicPartition names the partition to the coordinator.
	TopicPartition() txn.TopicPartition
	// Producers is the partition's producer state.
	Producers() *producer.State
	// WithProducers runs fn serialised with the partition's appends
	// (log.Log.WithProducers).
	WithProducers(fn func())
}

// Coordinator asks transactions' coordinators; *coordinator.Coordinator
// implements it.
type Coordinator interface {
	// VerifyForProduce returns the partitions that may not be appended
	// with their Produce error codes, an error only when ctx ended first.
	VerifyForProduce(ctx context.Context, transactionalID string, pid int64, epoch int16, parts []txn.TopicPartition, version int16) (map[txn.TopicPartition]int16, error)
}

var _ Coordinator = (*coordinator.Coordinator)(nil)

// Guard is how one partition's transactional batch is appended: with
// Append as the log's append guard (log.AppendOptions.Guard), or refused
// with Err.
type Guard struct {
	Append func(wlog.BatchInfo, int64) error
	Err    error
}

// defaultTimeout bounds a verification of a request without a timeout.
const defaultTimeout = 30 * time.Second

// Produce verifies the transactional batches of a Produce request before
// anything is appended, as Kafka's ReplicaManager does; one coordinator
// call covers every partition. verifyAll is
// transaction.partition.verification.enable: when false, classic
// (Produce v3-11) batches are appended without asking. The answer is each
// transactional partition's Guard, nil for a request that is not
// transactional.
func Produce(ctx context.Context, host Host, coord Coordinator, r *kmsg.ProduceRequest, verifyAll bool) map[Partition]Guard {
	if r.TransactionID == nil {
		return nil
	}
	op := coordinator.ProduceOperation(r.Version)
	verify := verifyAll || op == coordinator.AddPartition
	var (
		out    map[Partition]Guard
		ask    []Partition
		parts  []txn.TopicPartition
		pid    int64
		epoch  int16
		header bool
	)
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			h, err := wlog.ParseBatchHeader(rp.Records)
			if err != nil || !h.IsTransactional() || h.ProducerID < 0 {
				continue
			}
			p, ok := host.Partition(rt.Topic, rt.TopicID, r.Version >= 13, rp.Partition)
			if !ok {
				continue
			}
			if out == nil {
				out = make(map[Partition]Guard)
			}
			st := p.Producers()
			if !verify {
				out[p] = Guard{Append: st.VerifiedGuard}
				continue
			}
			if header && (h.ProducerID != pid || h.ProducerEpoch != epoch) {
				out[p] = Guard{Err: fmt.Errorf("%w: one request's batches must come from one producer", kerr.InvalidRecord)}
				continue
			}
			pid, epoch, header = h.ProducerID, h.ProducerEpoch, true
			var g producer.VerificationGuard
			p.WithProducers(func() { g = st.StartVerification(h.ProducerID, h.ProducerEpoch) })
			out[p] = Guard{Append: st.GuardWith(g)}
			if op == coordinator.AddPartition {
				// Transaction version 2: the coordinator adds the
				// partition once the previous transaction's markers are
				// written, and every marker bumps the epoch, so the
				// epoch check alone refuses a batch whose transaction
				// ended after the answer; a guard would also be ended
				// by the previous transaction's marker written while
				// the coordinator waited for it.
				out[p] = Guard{Append: st.VerifiedGuard}
			}
			if g != producer.NoVerification {
				ask = append(ask, p)
				parts = append(parts, p.TopicPartition())
			}
		}
	}
	if len(ask) == 0 {
		return out
	}
	timeout := defaultTimeout
	if r.TimeoutMillis > 0 {
		timeout = time.Duration(r.TimeoutMillis) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := coord.VerifyForProduce(ctx, *r.TransactionID, pid, epoch, parts, r.Version)
	for i, p := range ask {
		switch code := res[parts[i]]; {
		case err != nil:
			out[p] = Guard{Err: fmt.Errorf("%w: verifying the transaction: %v", kerr.RequestTimedOut, err)}
		case code != 0:
			out[p] = Guard{Err: fmt.Errorf("%w: the transaction coordinator refused partition %s-%d", kerr.ErrorForCode(code), parts[i].Topic, parts[i].Partition)}
		}
	}
	return out
}
