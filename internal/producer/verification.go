package producer

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/log"
)

// VerificationGuard names one verification of a producer's transaction on
// a partition (KIP-890 part 1, Kafka's VerificationGuard). The broker
// starts one before it asks the coordinator whether the transaction holds
// the partition, and appends with it once the coordinator said yes. A
// marker for the producer ends every verification started before it, so
// an answer that was true when asked but whose transaction has ended since
// (the coordinator aborted it and the producer started another without
// this partition) no longer lets a batch in: the batch would open a
// transaction no coordinator knows, which would never end.
type VerificationGuard uint64

// NoVerification is the guard of an append that needs none: the batch
// continues the producer's transaction ongoing on the partition.
const NoVerification VerificationGuard = 0

// verification is a verification in progress for a producer.
type verification struct {
	guard   VerificationGuard
	epoch   int16
	started int64 // clock, milliseconds, for expiry
}

// StartVerification begins a verification of producer pid's transaction
// at epoch on this partition and returns its guard, or NoVerification
// when the producer's transaction is already ongoing here at that epoch
// (the broker then skips asking the coordinator, as Kafka does). A
// verification in progress for the producer is reused. Like every call on
// a State it must be serialised with the appends (log.Log.WithProducers).
func (s *State) StartVerification(pid int64, epoch int16) VerificationGuard {
	if e := s.read().producers[pid]; e != nil && e.txnFirst >= 0 && e.epoch == epoch {
		return NoVerification
	}
	if v := s.read().verifications[pid]; v != nil {
		v.epoch = max(v.epoch, epoch)
		return v.guard
	}
	t := s.write()
	if t.verifications == nil {
		t.verifications = make(map[int64]*verification)
	}
	t.lastGuard++
	v := &verification{guard: VerificationGuard(t.lastGuard), epoch: epoch, started: s.now().UnixMilli()}
	t.verifications[pid] = v
	return v.guard
}

// CheckGuarded is Check for a batch appended after the coordinator
// verified its transaction under guard g (StartVerification): a
// transactional batch that does not continue the producer's ongoing
// transaction is accepted only while g is the producer's verification in
// progress, otherwise INVALID_TXN_STATE. The other checks are Check's.
func (s *State) CheckGuarded(h *log.BatchHeader, g VerificationGuard) error {
	if h.IsTransactional() && h.ProducerID >= 0 && !s.hasOngoing(h.ProducerID, h.ProducerEpoch) {
		v := s.read().verifications[h.ProducerID]
		if g == NoVerification || v == nil || v.guard != g {
			return fmt.Errorf("%w: transactional batch from producer %d epoch %d: its verification on this partition is missing or ended", kerr.InvalidTxnState, h.ProducerID, h.ProducerEpoch)
		}
	}
	return s.check(h, true)
}

// GuardWith returns the log.AppendOptions.Guard of an append verified
// under g: CheckGuarded.
func (s *State) GuardWith(g VerificationGuard) func(log.BatchInfo, int64) error {
	return func(info log.BatchInfo, _ int64) error { return s.CheckGuarded(&info.BatchHeader, g) }
}

func (s *State) hasOngoing(pid int64, epoch int16) bool {
	e := s.read().producers[pid]
	return e != nil && e.txnFirst >= 0 && e.epoch == epoch
}

// endVerification forgets a producer's verification in progress (a marker
// was written for it).
func (s *State) endVerification(pid int64) {
	if s.t != nil {
		delete(s.t.verifications, pid)
	}
}

// expireVerifications forgets verifications started at least the
// expiration ago (a broker that never heard back). now in milliseconds.
func (s *State) expireVerifications(now, limit int64) {
	if s.t == nil {
		return
	}
	for pid, v := range s.t.verifications {
		if now-v.started >= limit {
			delete(s.t.verifications, pid)
		}
	}
}
