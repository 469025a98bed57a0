package replica

import "errors"

// RoleChange is a local replica's new state from the metadata image.
type RoleChange struct {
	Replica *Replica
	State   PartitionState
}

// ApplyRoles makes local replicas leader or follower as the metadata
// image says (the part of Kafka's ReplicaManager.applyDelta that touches
// replicas), with one call into the fetchers for all of them: new leaders
// leave their fetchers first, then lead; followers follow, then join the
// fetchers of their leaders; replicas left without a leader leave theirs.
// A state older than the replica's is skipped whole; other refusals are
// logged, and a follower that refused its state is left out of the
// fetchers' changes. The broker's
// metadata loop calls it: the one caller of BecomeLeader and
// BecomeFollower.
func (m *Manager) ApplyRoles(changes []RoleChange) {
	var leading []*Replica
	var stopping []*Replica
	var follows []Follow
	fresh := changes[:0:0]
	for _, c := range changes {
		// A state older than the replica's (a smaller leader epoch)
		// leaves the replica, and its fetcher, as the newer one made
		// them: not even a new leader's leaving its fetcher happens.
		if _, _, epoch := c.Replica.State(); c.State.LeaderEpoch < epoch {
			continue
		}
		fresh = append(fresh, c)
		if c.State.Leader == m.cfg.LocalID {
			leading = append(leading, c.Replica)
		}
	}
	changes = fresh
	if len(leading) > 0 {
		m.RemovePartitions(leading)
	}
	for _, c := range changes {
		r, st := c.Replica, c.State
		if st.Leader == m.cfg.LocalID {
			if err := r.BecomeLeader(st); err != nil && !errors.Is(err, ErrStaleState) {
				m.logger.Warn("cannot lead", "topic", r.Topic(), "partition", r.Partition(), "err", err)
			}
			continue
		}
		if err := r.BecomeFollower(st); err != nil {
			if !errors.Is(err, ErrStaleState) {
				m.logger.Warn("cannot follow", "topic", r.Topic(), "partition", r.Partition(), "err", err)
			}
			continue
		}
		if st.Leader >= 0 {
			follows = append(follows, Follow{Replica: r, Leader: st.Leader, LeaderEpoch: st.LeaderEpoch})
		} else {
			stopping = append(stopping, r)
		}
	}
	if len(stopping) > 0 {
		m.RemovePartitions(stopping)
	}
	if len(follows) > 0 {
		m.AddPartitions(follows)
	}
}
