package group

// Reconciliation moves one consumer-protocol member from the partitions it
// holds toward its target assignment, one heartbeat at a time, such that no
// partition is ever held by two members:
//
//   - A partition leaving the member is first only revoked: it stays held
//     (pending revocation) until the member's heartbeat no longer lists it
//     among the partitions it owns.
//   - A partition joining the member is handed over only once no other
//     member holds it (assigned or pending revocation). Until then the
//     member waits in UNRELEASED_PARTITIONS.
//   - While it has partitions to revoke the member keeps its epoch; once it
//     has none, it moves to the target epoch.
//
// This follows the states of Kafka's consumer group protocol (KIP-848).

type memberState int8

const (
	memberStable     memberState = 0 // holds its target at the target epoch
	memberUnrevoked  memberState = 1 // must first give up partitions
	memberUnreleased memberState = 2 // waits for partitions other members hold
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "STABLE"
	case memberUnrevoked:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleased:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// assignState is the part of a member that reconciliation changes.
type assignState struct {
	epoch     int32
	prevEpoch int32
	state     memberState
	assigned  tps // held, value: epoch assigned at
	pending   tps // held but being revoked, value: epoch assigned at
}

// reconcileInput is what reconciliation needs to know besides the member.
type reconcileInput struct {
	memberID    string
	target      tps
	targetEpoch int32
	// subscribed reports whether the member still subscribes to a topic;
	// partitions of other topics are revoked whatever the target says.
	subscribed func(topicID) bool
	// holder returns the member holding a partition, "" if none.
	holder func(topicID, int32) string
	// owned is what the member reported owning; nil if it did not say,
	// which counts as still owning everything being revoked.
	owned tps
}

func ownsAny(pending, owned tps) bool {
	if owned == nil {
		return pending.count() > 0
	}
	for id, ps := range pending {
		for p := range ps {
			if owned.has(id, p) {
				return true
			}
		}
	}
	return false
}

// reconcile returns the member's next assignment state. It does not modify
// cur.
func reconcile(cur assignState, in reconcileInput) assignState {
	if cur.epoch == in.targetEpoch && cur.state == memberStable {
		return cur
	}
	if cur.state == memberUnrevoked && ownsAny(cur.pending, in.owned) {
		return cur
	}
	return nextAssignment(cur, in)
}

func nextAssignment(cur assignState, in reconcileInput) assignState {
	assigned := make(tps)
	pending := make(tps)
	toAssign := make(tps)
	unreleased := false

	topics := make(map[topicID]struct{}, len(in.target)+len(cur.assigned))
	for id := range in.target {
		topics[id] = struct{}{}
	}
	for id := range cur.assigned {
		topics[id] = struct{}{}
	}
	for id := range topics {
		target := in.target[id]
		if !in.subscribed(id) {
			target = nil
		}
		held := cur.assigned[id]
		for p, at := range held {
			if _, ok := target[p]; ok {
				assigned.add(id, p, at)
			} else {
				pending.add(id, p, at)
			}
		}
		for p := range target {
			if _, ok := held[p]; ok {
				continue
			}
			if h := in.holder(id, p); h != "" && h != in.memberID {
				unreleased = true
				continue
			}
			toAssign.add(id, p, in.targetEpoch)
		}
	}

	next := assignState{prevEpoch: cur.epoch, assigned: assigned, pending: make(tps)}
	switch {
	case pending.count() > 0 && ownsAny(pending, in.owned):
		// Revoke first, at the current epoch.
		next.state = memberUnrevoked
		next.epoch = cur.epoch
		next.pending = pending
	case toAssign.count() > 0:
		for id, ps := range toAssign {
			for p, at := range ps {
				assigned.add(id, p, at)
			}
		}
		next.state = memberStable
		if unreleased {
			next.state = memberUnreleased
		}
		next.epoch = in.targetEpoch
	case unreleased:
		next.state = memberUnreleased
		next.epoch = in.targetEpoch
	default:
		next.state = memberStable
		next.epoch = in.targetEpoch
	}
	return next
}
