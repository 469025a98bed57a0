// Package cluster runs the replicated metadata log and the controller on
// each node, and gives a broker its side of the controller protocol. It
// is the glue between three pure packages: internal/quorum (one
// hashicorp/raft node), internal/metadata (records, images, snapshots)
// and internal/controller (the controller's decisions).
//
// # What it owns
//
//   - MetadataFSM (fsm.go): the raft state machine. Each committed entry
//     is a metadata batch applied at its raft index as the image's offset;
//     an entry that does not decode or apply is deterministic, so it is
//     applied as an empty batch and offsets stay equal everywhere. The
//     image is published through an atomic pointer (Image), Changed and
//     WaitForOffset wake waiters, and Subscribe delivers every delta in
//     log order. Snapshot and Restore use metadata.WriteSnapshot and
//     ReadSnapshot.
//   - Node (node.go, active.go): opens the quorum node (a voter when
//     listed in Config.Voters; a single node is a one-voter quorum on the
//     same path) and, while it leads, runs the active controller: a
//     barrier, controller.New on the committed image, then one loop that
//     takes requests from a typed queue, proposes each decision's records
//     as one entry, replies once that entry is applied here, and ticks at
//     the controller's NextDeadline (at least every TickInterval). A
//     proposal error, an entry it did not write, or lost leadership drops
//     the controller: waiting requests get NOT_CONTROLLER and, if still
//     leader, a new controller starts from the committed image. Node.
//     Controller returns the submit handle (Active) or a
//     *NotControllerError with the leader's id. The leader also adds the
//     configured non-voters to the raft configuration.
//   - HandleControllerRequest and the NOT_CONTROLLER answers
//     (dispatch.go, notcontroller.go): the server-side entry point for
//     the ControllerKeys.
//   - ControllerClient (client.go) with two implementations: LocalClient
//     (same process, calls the Node) and KafkaClient (kafka_client.go,
//     kconn.go: the Kafka protocol to the active controller's Kafka
//     listener over a plain net.Conn with our own framing and kmsg
//     bodies, following the raft leader, retrying NOT_CONTROLLER).
//   - BrokerLifecycle (lifecycle.go): register, heartbeat every 2 s with
//     the applied offset, active once unfenced, register again when
//     forgotten, controlled shutdown on request.
//
// # What it does not own
//
// The controller's decisions (internal/controller), the image and record
// format (internal/metadata), raft itself (internal/quorum), the Kafka
// listener and framing of requests it serves (internal/server), and
// validation of topic and broker configs (internal/config: the broker
// passes a ConfigMerger). Reacting to a broker's own changes (becoming
// leader or follower of partitions) belongs to the broker: it subscribes
// to the FSM and calls Delta.Local.
//
// # Concurrency
//
// Goroutines, all owned and stopped by Close:
//
//   - Node: one leadership watcher; while leading, one term goroutine
//     running one controller at a time, the proposer that hands batches
//     to raft one at a time in decision order (raft's Propose waits for
//     the commit, so decisions overlap with commits but proposals are not
//     pipelined), and a goroutine adding non-voters. The controller is
//     touched only by its loop.
//   - hashicorp/raft calls Apply, Snapshot and Restore on its FSM
//     goroutine; they never wait for subscribers.
//   - BrokerLifecycle: one loop.
//   - KafkaClient: none; each request uses a connection of its own from a
//     small pool.
//
// Locks (all leaves except as noted): MetadataFSM.mu orders image
// publication with subscription and is held while appending to each
// Subscription (whose own mu is taken under it); KafkaClient.mu guards
// the idle pool.
//
// Subscriber backpressure: each Subscription buffers up to its limit of
// updates; one more collapses the buffer into one Resync update with the
// newest image. Apply never blocks on a subscriber.
//
// # The API the broker calls
//
//	n, _ := cluster.Open(cluster.Config{ID, Dir, RaftAddr, Voters, NonVoters, ...})
//	n.FSM().Image()                 // Metadata, DescribeCluster, FindCoordinator
//	sub := n.FSM().Subscribe(0)     // deltas -> Delta.Local(id) -> replicas
//	n.HandleControllerRequest(ctx, key, req) // handlers of the ControllerKeys
//	cl := cluster.NewKafkaClient(cluster.KafkaClientConfig{Leader: n.Leader,
//		Resolve: cluster.ListenerResolver(n, "PLAINTEXT"), Local: n})
//	life, _ := cluster.StartLifecycle(cluster.LifecycleConfig{BrokerID, Listeners,
//		Client: cl, Metadata: n.FSM()})
//	<-life.Unfenced()               // may lead partitions
//	life.Shutdown(ctx)              // on SIGTERM: controlled shutdown
//	life.Close(); n.Close()
package cluster
