// Package kraft is the node of the metadata quorum, KRaft's pieces in
// weir: it runs the replicated metadata log and the controller on
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
//   - Join (join.go): a broker's way into the quorum from its
//     QuorumConfig: loads or derives the cluster id, writes Kafka's
//     meta.properties, opens the Node (quick raft timeouts for a quorum
//     of one) and the KafkaClient the broker sends controller requests
//     with; Node.WaitController; ProducerIDReserver, the producer id
//     blocks the controller allocates; ClientError, what a client sees of
//     a failed controller call.
//   - HandleControllerRequest and the NOT_CONTROLLER answers
//     (dispatch.go, notcontroller.go): the server-side entry point for
//     the ControllerKeys.
//   - ControllerClient (client.go) with two implementations: LocalClient
//     (same process, calls the Node) and KafkaClient (kafka_client.go,
//     kconn.go: the Kafka protocol to the active controller's Kafka
//     listener over a plain net.Conn with our own framing and kmsg
//     bodies, following the raft leader, retrying NOT_CONTROLLER, and
//     giving up a round trip when the quorum names a leader at another
//     address while it waits).
//   - InterBrokerClient (interbroker.go): requests to other brokers'
//     Kafka listeners (the replica fetchers' Transport, the share and
//     transaction coordinators' inter-broker calls), one KafkaClient per
//     broker, each request bounded by a timeout.
//   - BrokerLifecycle (lifecycle.go): register, heartbeat every 2 s with
//     the applied offset, active once unfenced, register again when
//     forgotten, controlled shutdown on request.
//   - AutoTopicCreationManager (auto_topic.go): the internal topics a
//     broker's coordinators need (__consumer_offsets, __transaction_state,
//     __share_group_state) created through the controller unless the
//     image has them, the replication factor capped at the active brokers
//     and the configs chosen for it (InternalTopic.Configs), then waited
//     for until the broker has applied them (Config.Applied); at most one
//     background creation per topic at a time (EnsureAsync). Which
//     partitions, replicas and configs each topic wants is its owner's
//     (the broker passes an InternalTopic).
//
// # What it does not own
//
// The controller's decisions (internal/controller), the image and record
// format (internal/metadata), raft itself (internal/quorum), the Kafka
// listener and framing of requests it serves (internal/server), and
// validation of topic and broker configs (internal/config: the broker
// passes a controller.ConfigPolicy in Config.Controller). Reacting to a broker's own changes (becoming
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
//   - AutoTopicCreationManager: one goroutine per creation EnsureAsync
//     started, Close cancels and waits for them.
//   - KafkaClient and InterBrokerClient: none; each request uses a
//     connection of its own from a small pool.
//
// Locks (all leaves except as noted): MetadataFSM.mu orders image
// publication with subscription and is held while appending to each
// Subscription (whose own mu is taken under it); KafkaClient.mu guards
// the idle pool; AutoTopicCreationManager.mu the creations under way;
// InterBrokerClient.mu guards its map of clients and is released before
// any of them is used.
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
//	cl := kraft.NewKafkaClient(kraft.KafkaClientConfig{Leader: n.Leader,
//		Resolve: kraft.ListenerResolver(n, func() string { return "PLAINTEXT" }), Local: n})
//	life, _ := cluster.StartLifecycle(cluster.LifecycleConfig{BrokerID, Listeners,
//		Client: cl, Metadata: n.FSM()})
//	<-life.Unfenced()               // may lead partitions
//	life.Shutdown(ctx)              // on SIGTERM: controlled shutdown
//	life.Close(); n.Close()
//
// Wiring: the broker's handlers for BrokerRegistration, BrokerHeartbeat,
// AlterPartition, UnregisterBroker and AllocateProducerIds (requests
// other brokers' KafkaClients send) call HandleControllerRequest. Its
// handlers for the admin requests clients send (CreateTopics,
// DeleteTopics, CreatePartitions, ElectLeaders, IncrementalAlterConfigs,
// the reassignment requests, CreateAcls, DeleteAcls, AlterClientQuotas,
// AlterUserScramCredentials) call cl.Admin, once they have authorized
// the request (internal/authz): with Local set, the
// KafkaClient takes the local path when this node leads and forwards to
// the leader's listener otherwise, so a forwarded request reaching the
// controller's node goes local instead of looping. cl.AdminAt also
// returns the metadata offset at which the outcome committed (carried
// back over the wire in weir's wiretag.ControllerOffset at flexible
// versions), so the broker can answer its client once it has applied
// that offset. The broker sets Config.Controller.Configs to
// internal/config's validation (config changes are decided on the
// controller's configs, from the request's operations) and validates
// CreateTopics configs before forwarding: the controller records them
// as given.
//
// # Measured
//
// Whole clusters of three raft nodes in one test process on 127.0.0.1,
// each node with a Kafka listener (internal/server) and a broker
// lifecycle talking to the controller over the Kafka protocol; a 2-vCPU
// machine shared with other work (load average 2 to 4 during the runs).
// The commands and raw results are in testdata/bench-results.txt
// (go test -run '^$' -bench <name> -benchtime=Nx ./internal/kraft/).
//
//   - Controlled shutdown, request to "may stop" (the one batch committed,
//     every active broker has applied it, the broker is fenced), RF 3 on
//     three brokers so the batch changes every partition: leading 10,000
//     of 30,000 partitions, 0.16 s; 33,333 of 100,000, 0.34 s; 333,334 of
//     1,000,000, 7.0 s. Always one committed batch with all leader moves
//     (asserted; TestThreeVotersAndANonVoter asserts it too: 1,000
//     partitions, about 0.05 to 0.17 s under -race).
//   - Failover, killing the raft leader (Close) to the first leadership
//     change the new controller accepts (a preferred election sent
//     through a surviving broker's Kafka client): 0.73 s at 100,000
//     partitions and 0.73 s at 1,000,000 with raft's former 300 ms
//     timeouts; the new controller was active after 0.63 s and 0.66 s.
//     It does not grow with the partition count: the new leader already
//     holds the image, so taking over is a raft election, a barrier and
//     controller.New. With 2 s timeouts the election is started by
//     internal/quorum's watch once the dead leader's port refuses
//     connections (TestThreeVotersAndANonVoter, which kills the node
//     without a leadership transfer, logs about 0.46 s under -race).
//   - Creating 100,000 partitions (RF 1, 2,000 topics of 50) through the
//     controller: 0.44 s in one request (one 100,000-record batch), 0.33 s
//     in 100 requests of 1,000, until the last answer; every node's image
//     has them 0.36 to 0.51 s after the start. 1,000,000 partitions in 100
//     requests: 2.9 s (3.1 s on every node).
//   - Metadata memory per partition: 47 bytes in an image (RF 1, measured
//     by loading the image from a snapshot; internal/metadata gives about
//     60 with three replicas), 49 bytes of heap per partition per node in
//     the cluster after small batches; after one 100,000-record batch the
//     heap holds about 130 bytes per partition per node, the rest being
//     buffers sized by the largest raft entry.
//
// Where the time goes at 1,000,000 partitions (CPU profile of the
// shutdown): about a quarter in hashicorp/raft's leader re-reading the
// previous entry from raft-wal for every append (setPreviousLog decodes
// the whole 40 MB batch again), about a third in decoding and applying
// the batch on three nodes, and much of the rest in garbage collection
// over three large images in one process.
// A log cache in front of the log store (raft.NewLogCache, in
// internal/quorum) would remove the first part.
//
// # Known limits
//
//   - Proposals are not pipelined: quorum.Propose waits for the commit,
//     so the loop hands raft one batch at a time (decisions continue
//     meanwhile, against the view with the batches in flight).
//   - raft-wal keeps serving entries below a compacted head while they
//     sit in its unsealed tail segment (64 MiB), so a follower that falls
//     behind by less than that is sent log entries, not the snapshot; a
//     restarting node restores its own latest snapshot and replays only
//     the entries after it.
//   - A broker that dies keeps its leaderships until its session lapses
//     (broker.session.timeout.ms, 9 s) unless the owner calls
//     Active.FenceBroker; nothing here watches raft peers. The broker
//     (liveness.go: ProbeLiveness) does: the active controller's node
//     fences a broker whose listener refuses connections.
//   - A request interrupted by a change of controller gets
//     NOT_CONTROLLER although its batch may commit; retried, it may find
//     its own work done (TOPIC_ALREADY_EXISTS), as with Kafka.
package kraft
