package broker

// A full or failing data directory (internal/logdir). A write or sync of
// a partition's log that fails takes the directory offline: produce is
// answered KAFKA_STORAGE_ERROR at once (00_produce.go), DescribeLogDirs
// reports the error, and, when another broker is active to take them
// over, the broker asks the controller to fence it (its heartbeat's
// WantFence, kraft.LifecycleConfig.Ready), which moves its leaderships
// and takes it out of the ISRs, so that producers and consumers go on
// through the other replicas (NOT_LEADER_OR_FOLLOWER sends them there).
// A lone broker keeps its leaderships: reads of what is stored go on.
// Once the directory takes writes again it asks to be unfenced, catches
// up as a follower and rejoins the ISRs.

// logDirChanged is told when the data directory goes offline or comes
// back: the controller hears of it at once rather than at the next
// heartbeat.
func (b *Broker) logDirChanged(bool) {
	// started is stored after life is set (Start): a failure during
	// start-up waits for the first heartbeat instead.
	if b.started.Load() {
		b.life.HeartbeatNow()
	}
}

// leadershipReady is the lifecycle's Ready: the broker may lead unless
// its data directory is offline and another active broker can lead
// instead.
func (b *Broker) leadershipReady() bool {
	if b.logDir.Online() {
		return true
	}
	for _, br := range b.node.Image().Brokers() {
		if br.ID != b.cfg.NodeID && br.Active() {
			return false
		}
	}
	return true
}
