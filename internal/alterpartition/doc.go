// Package alterpartition is Kafka's AlterPartitionManager: it sends the
// ISR changes that this broker's leader replicas propose to the active
// controller as AlterPartition requests and reports each partition's
// outcome back to its replica.
//
// # What it owns
//
// The queue of proposals not sent yet, oldest first (at most one per
// partition: a newer proposal replaces an older one still queued, in its
// place), their batching into one AlterPartition v3 request at a time
// (KIP-903: topic ids and each new ISR member's broker epoch), matching
// the answer's partitions to the proposals, and resending, after a
// back-off that doubles from MinBackoff to MaxBackoff, the proposals
// whose outcome is unknown. A failover that makes thousands of
// partitions propose at once therefore costs a few requests on one
// connection, not a request, a goroutine and a connection per partition.
//
// It is a package of its own, not part of internal/replica, because it
// is the broker's side of the controller protocol: the replica decides
// what to propose and what an answer means (Replica.CompleteISRChange
// says whether to send again); this package only carries proposals and
// answers, over whatever Host.AlterPartition reaches the controller
// with.
//
// # What it does not own
//
// ISR decisions and the meaning of an answer (internal/replica: which
// errors drop a change, which keep it in flight until metadata arrives,
// which leave the outcome unknown), the periodic shrink check
// (replica.ExpireISR), the connection to the
// controller and finding it (Host.AlterPartition: internal/kraft's
// KafkaClient in the broker), the metadata image (Host.RegisteredEpoch),
// and the controller's handling of the request (internal/controller).
//
// # The API the broker calls and implements
//
//	m := alterpartition.New(alterpartition.Config{BrokerID, Host, Logger})
//	replica.Env{OnISRChange: func(r *replica.Replica, ch replica.ISRChange) { m.Submit(r, ch) }}
//	go m.Run(ctx) // in a cluster; returns when ctx ends
//
// Host (the broker): AlterPartition(ctx, req) sends to the active
// controller, BrokerEpoch() is this broker's registered epoch (-1 before
// it registered), RegisteredEpoch(id) is another broker's epoch in the
// metadata image, used for ISR members whose fetches carried none.
//
// # Tests
//
// Transcripts (testdata/manager/*.txt) of a Manager against a scripted
// controller on a manual clock: batching, encoding, answers matched to
// proposals, resends and their back-off. Unit tests of the same against
// a fake Host, of stopping, of the request timeout, and of a real leader
// replica's shrink and what it makes of accepted, stale, fenced and
// NOT_CONTROLLER answers (replica_test.go). FuzzResults matches arbitrary
// answers to a batch (seeds in testdata/fuzz).
//
// # Concurrency
//
// Submit may be called from any goroutine (replicas call it with no lock
// held) and never blocks: it puts the proposal in the queue under
// Manager.mu, a leaf, and wakes Run. Run is the one goroutine that sends:
// one request at a time, no lock held while it is out, then each result
// goes to its partition's CompleteISRChange on that goroutine. Its owner
// (the broker) starts it and stops it by cancelling its context; a
// request in flight is abandoned with the context, and proposals still
// queued are dropped with the Manager.
package alterpartition
