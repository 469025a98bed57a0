// Package controller decides the cluster's metadata changes: which
// records the active controller writes to the metadata log. It is a pure
// state machine in the style of a raft core: requests and ticks go in,
// replies and batches of metadata records come out, and everything with
// side effects (the log, the network, timers, disks) belongs to its owner.
//
// # What it owns
//
//   - Broker lifecycle (brokers.go): registration with broker epochs and
//     incarnations (BrokerRegistration), heartbeats and sessions
//     (BrokerHeartbeat, broker.session.timeout.ms), fencing when a
//     session lapses (Tick) or at once when the owner knows a broker is
//     gone (FenceBroker), unfencing once a broker has caught up with its
//     registration, controlled shutdown, unregistration, producer-id
//     blocks (AllocateProducerIds).
//   - Topics (topics.go): CreateTopics with Kafka's rack-aware round-robin
//     placement over the active brokers (placement.go), CreatePartitions,
//     DeleteTopics.
//   - Config changes (configs.go): IncrementalAlterConfigs and the legacy
//     AlterConfigs, decided against the configs in the controller's view
//     (committed plus in flight) by a ConfigPolicy the owner supplies, so
//     that requests taken by different brokers apply one after the
//     other; only the differences are written.
//   - Leadership (elect.go, leaders.go): elections from the ISR among
//     active brokers with leader epoch bumps, preferred elections
//     (ElectLeaders), auto leader rebalance and unclean elections where a
//     topic allows them (Tick).
//   - ISR changes requested by leaders (AlterPartition, isr.go) with
//     partition epochs, and reassignments (AlterPartitionReassignments,
//     ListPartitionReassignments, reassign.go).
//   - Security records (security.go): CreateAcls and DeleteAcls with
//     Kafka's validation and filter matching (internal/authz), ACL ids;
//     AlterUserScramCredentials (names, mechanisms, 4096..16384
//     iterations, stored and server keys derived from the salted
//     password); AlterClientQuotas (entities user, client-id, ip and
//     their defaults, quota keys and values, internal/quota). Whether the
//     caller may make these changes is the broker's to check first.
//
// Every decision is one batch: a controlled shutdown moves every
// leadership of the broker and takes it out of every ISR in the same
// batch, however many partitions that is; fencing several brokers whose
// sessions lapsed together is one batch too. A decision is computed
// against the controller's view with a metadata.Builder, so its records
// are checked by the same code that will apply them, and a decision whose
// records would not apply is dropped whole (UNKNOWN_SERVER_ERROR) rather
// than half written.
//
// # What it does not own
//
// Raft, the log and transport: the owner proposes each batch and applies
// committed ones. Request routing, authorization and the wire: the owner
// hands in kmsg requests and sends the kmsg responses. Config validation:
// the ConfigPolicy (internal/config's rules, plugged in by the broker);
// CreateTopics configs are recorded as given, validated first by the
// broker. The image: internal/metadata.
//
// # The contract with the owner
//
// The owner runs the controller on the node that leads the metadata
// quorum, on one goroutine (or under one lock): the controller has no lock
// and starts no goroutine. For each call that returns records it must:
//
//  1. propose the records as one log entry (metadata.EncodeBatch);
//  2. when that entry commits, apply it to the committed image
//     (Image.Apply) as every node does, call Committed with the new
//     image and delta, and only then send the reply;
//  3. if the entry cannot be committed (leadership lost, proposal
//     refused), drop this controller: its view includes records that may
//     never commit. The next leader builds a new one with New from its
//     committed image.
//
// The owner's loop looks like this (r is the raft node; applied carries
// the FSM's committed images and deltas, in log order):
//
//	c := controller.New(cfg, committedImage) // on becoming leader, after a barrier
//	for {
//		select {
//		case req := <-requests: // forwarded broker and admin requests
//			resp, recs := dispatch(c, req) // c.Heartbeat, c.CreateTopics, ...
//			if len(recs) == 0 {
//				req.reply(resp)
//				continue
//			}
//			inflight.push(req, resp, r.Apply(metadata.EncodeBatch(recs), timeout))
//		case <-ticker.C:
//			propose(c.Tick())
//		case a := <-applied:
//			c.Committed(a.Image, a.Delta)
//			inflight.popReply() // the entry's reply may go now
//		case <-leadershipLost: // or any proposal error
//			return // drop c; the next leader starts a new one
//		}
//	}
//
// Replies without records can be sent at once. Calls may be made while
// earlier batches are in flight: the controller's view (Image) already
// includes them, so decisions build on each other. Tick should be called
// about once a second, or at NextDeadline. The clock and the random
// source are in Config, so that tests, and the transcripts in
// testdata/transcripts, replay exactly.
//
// # State that is not in the log
//
// Heartbeat sessions, the offsets brokers report and the offsets at which
// registrations and controlled shutdowns committed live only in the
// active controller. A controller built by New after a failover gives
// every broker a fresh session and requires brokers to report the offset
// of the image it started from before it unfences them or lets a
// shutting-down broker go. Nothing else is lost: the image holds every
// decision, so a new controller takes over without reloading anything.
//
// # Cost
//
// Decisions that concern one broker (fencing, controlled shutdown,
// unregistration) scan every partition once and change the ones they
// must through the builder; no decision logs per partition. Measured on a
// shared 2-core machine (go test -bench . -benchtime=5x, bench_test.go),
// deciding, encoding, decoding and applying the batch:
//
//   - controlled shutdown of a broker leading 10,000 partitions (50,000
//     RF 2 topics on 5 brokers, 20,000 partition changes): about 0.14 s;
//     the seed post's cluster (25,000 topics, the broker leads 5,000):
//     about 0.05 s;
//   - controlled shutdown of a broker leading 33,333 of 100,000 RF 3
//     partitions on 3 brokers (every partition changes): about 0.25 s;
//   - fencing a broker at 1,000,000 partitions on 3 brokers: about 0.6 s
//     with RF 1 (333,334 leaderships), 1.7 s with RF 3 (every partition).
package controller
