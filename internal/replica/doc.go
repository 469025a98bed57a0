// Package replica is one partition replica's replication logic on top of
// its log (internal/log): the leader/follower role, the leader-epoch
// cache, the leader's view of its followers (high watermark, ISR shrink
// and expand decisions, acks=all waiting), the follower's truncation and
// appends, and the fetchers that pull data from leaders.
//
// # What it owns
//
//   - The leader-epoch cache (EpochCache): (epoch, start offset) entries,
//     persisted in the partition directory as "leader-epoch-checkpoint"
//     (text: "v1", the count, one "epoch offset" line each), replaced
//     atomically (temporary file, rename) on every change, without fsync:
//     fsyncs on every election of every partition cost more than the
//     election. After a crash the file may be ahead of the log or lag it;
//     Open cuts it to the log's end and start, adds the epochs of batches
//     after its newest entry, and rebuilds it from the batch headers if
//     the file is missing or does not decode (in memory: the next change
//     writes the file, so a restart writes none for the logs whose only
//     entry came before their directory).
//   - The role and leader epoch of the replica, set by the broker from the
//     metadata image (BecomeLeader / BecomeFollower).
//   - As leader: each follower's fetch offset and last caught-up time, the
//     committed ISR and at most one proposed change in flight, the high
//     watermark, and the acks=all waiters.
//   - As follower: truncation to the divergence point, appends of the
//     leader's batches with their offsets, the follower high watermark.
//   - Manager: one fetcher goroutine per leader broker, each with its
//     fetch session to that leader.
//
// # What it does not own
//
// Metadata (internal/metadata), talking to the controller
// (internal/alterpartition sends the ISRChange proposals as AlterPartition
// and reports the outcome), the
// Kafka request handlers and their error-code mapping (errors returned here
// wrap kerr errors; the broker answers with their codes), the network
// (Transport is the broker's), and retention scheduling. The high
// watermark is noted in the log (Log.NoteHighWatermark), which its
// checkpoint persists; the broker passes the checkpointed one to Open.
//
// # The API the broker calls
//
// Opening: Open(log, hw, Config) for every local replica. Config carries
// an Owner (the broker's partition: it names the replica, Topic, TopicID
// and Partition, gives the Env with ReplicaEnv, which the replica keeps
// no pointer to, and the shared callbacks find it with r.Owner()),
// MinISR (min.insync.replicas; SetMinISR on a config change); the Env
// every replica of the broker shares (NewEnv, which also makes the
// counters Stats reports, the broker's together as Kafka counts ISR
// shrinks and expands, kept there rather than per replica): LocalID, MaxLag (replica.lag.time.max.ms),
// HoldHWUnderMinISR (KIP-966's rule, off by default),
// Eligible(brokerID, brokerEpoch) (KIP-841/903: may a broker, at the
// broker epoch its fetch carried, join an ISR; EligibleIn answers it from
// the metadata image), Now, Logger, and the
// callbacks:
//
//   - OnISRChange(r, ISRChange): send an AlterPartition. No lock held;
//     must not block.
//   - OnHighWatermark(r, hw): wake fetches parked on the partition
//     (consumers read up to the high watermark, so a follower's fetch that
//     moves it must wake them). No lock held; must not block.
//   - OnLogStart(r, start): the log start offset rose (retention,
//     DeleteRecords, a follower following its leader's): tell the fetch
//     sessions reading the partition. No lock held; must not block.
//   - LastFetch(r, follower): when that follower last fetched from this
//     broker in a fetch session holding the partition (zero if unknown).
//     An idle follower's session fetches do not name the partition and
//     the leader does not read it for them; at the next append a
//     follower that had the whole log counts as caught up until its last
//     session fetch (leaderState.noteLEO), so an append after a long
//     idle spell does not look like lag. Runs under the replica's locks:
//     quick, and must not call the Replica. A leadership starts compact
//     (no per-follower state, a bit per ISR follower that fetched at the
//     log end) and makes its followers' states at the first append, a
//     fetch anywhere else or a metadata change (leaderState.expand), so a
//     never-written partition led by this broker costs no follower state.
//   - OpenLog(r, cfg): opens the replica's log again, lazily, for its
//     first write (Replica.OwnLog). With it, a replica opened over a
//     never-written log holds the blank log of its settings (see
//     internal/log) rather than a Log of its own; Replica.Log reads it.
//   - OnFollowerAppend(r, header) and OnTruncate(r, end): keep
//     idempotent-producer state on followers (producer.State.Record for
//     each copied batch; rebuild after a truncation). Run under the role
//     lock: quick, and must not call the Replica. A log opened with the
//     producer state as log.Options.Producers keeps it itself (copies,
//     markers, truncation, restart), with the last stable offset and the
//     aborted-transaction index: then these two are not needed for it.
//
// No callback may call the Manager: follower-side callbacks run on a
// fetcher goroutine that RemovePartitions and Close wait for.
//
// On every metadata change of a partition with a local replica (st :=
// StateOf(image partition)), which Manager.ApplyRoles does for a batch of
// them with one call into the fetchers per kind of change:
//
//   - leader is this broker: Manager.RemovePartitions([r]) first (no
//     fetcher appends any more once it returns), then r.BecomeLeader(st).
//     A new leader epoch assigns (epoch, LEO) in the epoch cache (over a
//     never-written log the entry stays implied until the first append or
//     the leadership's end: 40 B less per idle led partition); the same
//     epoch with a newer partition epoch applies replicas and ISR.
//   - another leader (or none): r.BecomeFollower(st), then
//     Manager.AddPartitions([{r, leader, leaderEpoch}]) (it moves the
//     partition between fetchers and resumes one fenced by
//     FENCED_LEADER_EPOCH).
//   - replica deleted: Manager.RemovePartitions, then close the log.
//
// As leader:
//
//   - Produce: r.Append(batch, acks, opts) (NOT_ENOUGH_REPLICAS before the
//     append when acks=-1 and the committed ISR is smaller than
//     min.insync.replicas; NOT_LEADER_OR_FOLLOWER when not leading). For
//     acks=-1 then r.WaitForHW(ctx, res.LeaderEpoch, res.LastOffset+1)
//     with the request timeout in ctx: nil, NOT_ENOUGH_REPLICAS_AFTER_APPEND
//     (the high watermark passed the batch with the ISR under
//     min.insync.replicas), NOT_LEADER_OR_FOLLOWER (leadership moved), or
//     ctx.Err() (answer REQUEST_TIMED_OUT). No polling: waiters sleep on a
//     channel closed when the high watermark, ISR or role changes.
//   - Fetch with a replica id (ReplicaState.ID for v15+, ReplicaID
//     before): for each partition r.FetchForFollower(dst, FollowerFetch{
//     ReplicaID, BrokerEpoch (ReplicaState.Epoch), FetchOffset,
//     CurrentLeaderEpoch, LastFetchedEpoch, MaxBytes}); answer with its
//     Err code, HighWatermark, LogStartOffset, DivergingEpoch (only when
//     Diverged()) and the file Ranges. The leader epoch is checked before
//     the role, as in Kafka: a replica asked in an epoch it has not
//     reached answers UNKNOWN_LEADER_EPOCH even while still a follower
//     (the follower learnt of the promotion first); the broker holds that
//     partition like an empty one until its promotion, then asks again. It reads up to the log end (not
//     the high watermark), records the follower's progress, may propose an
//     ISR expansion and move the high watermark. When the answer is empty
//     the broker parks the fetch as it does for consumers and calls
//     FetchForFollower again when woken (an answer with DivergingEpoch is
//     not empty: the follower cannot catch up before it truncates).
//   - OffsetForLeaderEpoch: r.EndOffsetForEpoch(currentLeaderEpoch, epoch,
//     leaderOnly).
//   - WriteTxnMarkers: for each marker r.AppendMarker(log.TxnMarker{...},
//     log.AppendOptions{Guard: state.MarkerGuard(transactionVersion)})
//     (acks=-1 rules), then r.WaitForHW(ctx, res.LeaderEpoch,
//     res.LastOffset+1).
//   - Transactions: r.LastStableOffset() (the log's at the replica's high
//     watermark) next to r.HighWatermark(): read_committed reads stop
//     there, Fetch answers carry it, ListOffsets latest with
//     read_committed answers it.
//   - Every MaxLag/2 for each led partition: r.MaybeShrinkISR()
//     (ExpireISR, on a goroutine the broker owns).
//   - For each ISRChange passed to OnISRChange (internal/alterpartition
//     does this for the broker): send AlterPartition with
//     LeaderEpoch, PartitionEpoch, NewISR (v3 NewEpochISR: BrokerEpochs
//     holds what each member's last fetch carried, -1 for the leader and
//     unknown ones, which the broker fills from its registration), then
//     r.CompleteISRChange(change, ISRChangeResult{Err, LeaderEpoch,
//     PartitionEpoch, ISR}) with the partition's result (Err: the
//     partition's kerr error, or the transport's). When it returns true
//     the outcome is unknown (transport failure, NOT_CONTROLLER, an
//     unexpected error): resend the same change after a back-off until a
//     definite answer, as Kafka's AlterPartition manager does; the change
//     stays in flight meanwhile.
//   - Consumers read below r.HighWatermark(); DeleteRecords goes through
//     r.AdvanceStartOffset and retention through r.EnforceRetention, so
//     the epoch cache follows the log start. Every
//     leader append, the broker's own internal records included, goes
//     through r.Append (acks 1 where nobody waits), so the epoch stamped
//     is the one the cache holds and the high watermark follows.
//   - Metrics: r.Stats() (role, offsets, ISR size, under-replicated,
//     under min ISR, ISR shrinks/expands, truncations); persist
//     r.HighWatermark() periodically for the next Open.
//
// As follower nothing else is called: the Manager's fetcher sends Fetch
// v17 (ReplicaState with LocalID and BrokerEpoch, topic ids) through
// Transport in a fetch session (KIP-227, internal/fetchsession): the
// first request is full and opens the session; after it a request names
// only the partitions whose fetch position or leader epoch changed, and
// forgets those removed or backing off, so an idle follower's request
// names nothing (a session error, a lost answer or an interrupted
// request makes the next one full again). It appends with log.AppendReplicated, sets the
// high watermark to min(leader high watermark, log end offset), follows
// the leader's log start offset, truncates on DivergingEpoch, resets on
// OFFSET_OUT_OF_RANGE as Kafka does (ListOffsets v7 with the replica id:
// latest must be the leader's log end offset, not its high watermark;
// a log that ends below the leader's log start, as a follower away while
// retention, DeleteRecords or share-state trimming moved it finds, is
// dropped and started empty there, or at the base of the leader's batch
// that holds it),
// stops on FENCED_LEADER_EPOCH until AddPartitions brings a newer epoch,
// asks again at once on UNKNOWN_LEADER_EPOCH (the leader has not applied
// its promotion yet; a weir leader holds such a fetch until it has, or
// until MaxWait, so this does not spin), and backs off
// (replica.fetch.backoff.ms, 50 ms here) on other errors: a partition's
// error backs that partition off (it leaves the session until then), a
// failed request the whole fetcher. An AddPartitions call interrupts a
// fetcher's request in flight (at most once) only where waiting for it
// would matter: a partition the session holds taking a new leader
// epoch, replica or release from fencing (the request asked for the
// old one), or a partition with records joining (a leadership move:
// the leader may hold the request up to MaxWait when its partitions
// have nothing new, and acks=all produces on the new leader wait for
// this follower); the interrupted request's connection is closed,
// nothing of its answer is applied, and the next request is full. A
// never-written partition joins the next incremental request instead,
// so creating partitions a few at a time costs no full requests; an
// answered partition that was removed and added back since its request
// was built is not applied, and the next request is full. A partition whose log holds batches but no epochs is first cut to its high
// watermark, as Kafka does for followers without epoch information. The
// broker's Transport must bound every request with a timeout:
// RemovePartitions waits for a partition's response handling, which may
// include a ListOffsets round trip.
//
// # Kafka's rules implemented here
//
//   - High watermark: the smallest log end offset among the ISR members,
//     any member of an ISR change in flight, and followers outside the ISR
//     that are caught up and eligible (about to join); capped by the
//     leader's log end; never lowered by the leader. A new leader epoch
//     forgets follower offsets, so the inherited high watermark holds until
//     every ISR member has fetched. With Config.HoldHWUnderMinISR the high
//     watermark also stays while the ISR is under min.insync.replicas
//     (KIP-966).
//   - Caught up: the follower's fetch offset equals the leader's log end,
//     or it did within MaxLag; a fetch at or past the leader's log end
//     offset of the previous fetch dates "caught up" to that fetch.
//   - Shrink: ISR followers not caught up within MaxLag. Expand: an
//     eligible follower whose fetch offset reached the high watermark and
//     the leader epoch's start offset. One change in flight; metadata
//     (BecomeLeader) clears it, and may bring the committed change before
//     the controller's answer does (always possible on the controller's
//     own node: the answer then matches nothing in flight and is
//     dropped). Either way the leader logs "replica: ISR changed" at
//     INFO once, from=answer or from=metadata; a change it did not
//     propose (the controller's, or a restart replaying the metadata
//     log) is logged at debug. A change whose outcome is unknown is never
//     dropped: an expansion the controller committed but the leader
//     forgot would let the high watermark pass an ISR member (the
//     simulation test finds that loss when the change is dropped).
//   - acks=all: refused before the append with NOT_ENOUGH_REPLICAS when
//     the committed ISR is under min.insync.replicas; after it, done when
//     the high watermark passes the batch, NOT_ENOUGH_REPLICAS_AFTER_APPEND
//     if the ISR is then under min.insync.replicas (the data is committed
//     all the same, as in Kafka without KIP-966).
//   - Follower truncation: the leader answers a fetch whose last fetched
//     epoch ends earlier on the leader (or is unknown to it) with
//     DivergingEpoch; the follower cuts to the smaller end offset of that
//     epoch on both sides, or, when its own largest epoch below the
//     leader's is older, to that epoch's end and asks again.
//
// # Concurrency
//
// A Replica has two locks, taken in this order: roleMu (role and leader
// epoch; write-held to change them and to truncate, read-held across
// appends and fetch handling so both see one epoch; a roleLock, a
// reader/writer lock in half a sync.RWMutex's size), then mu (leader
// state, high watermark publication, the waiters' channel); the epoch
// cache's and the log's locks are leaves below them. The high watermark
// is the one noted in the log (Log.NoteHighWatermark), read without a
// lock; min.insync.replicas is guarded by roleMu. Callbacks run with no
// lock held.
// Each fetcher goroutine is the only writer of its partitions' logs;
// Manager.RemovePartitions waits for an append in progress to finish, and
// Manager.Close stops every fetcher and waits for it.
//
// # Tests
//
// Transcripts of the leader's decisions (testdata/leader_state/*.txt);
// table tests of the epoch cache, follower truncation and fetch answers; a
// fuzzed checkpoint decoder; in-process clusters of three replicas over
// real log directories and an in-memory transport (convergence byte for
// byte, acks=all, ISR shrink and rejoin with an injected clock, exact
// truncation of a divergent suffix, restarts); and a seeded step-by-step
// simulation (sim_test.go) of produces, small fetches, crashes, restarts,
// lag checks, clean elections, refused, delayed and lost AlterPartition
// answers, checking after every step that committed bytes never change
// and that every ISR member holds them.
//
// # Measured
//
// BenchmarkAppend: 1 KiB batches of 10 records, page cache only, on a
// 2-core machine shared with other builds (go test -run XXX -bench
// BenchmarkAppend -count 10 -benchtime 20000x ./internal/replica; median
// us/op of two runs): bare log 1.64 / 2.12, replica with ISR 1 1.96 /
// 1.80, replica with ISR 3 1.98 / 1.93, and replica with ISR 3 while two
// followers, woken after every append, fetch what it wrote 2.39 / 3.05.
// All 0 allocations per append. The replica's own part is within the
// noise; serving two followers costs the leader's cores 20-60% more per
// batch (both followers' fetch handling runs on the same two cores).
//
// # Known limits
//
//   - Truncation cuts at batch boundaries (log.Truncate); a divergence
//     point inside a local batch removes the whole batch, and the leader
//     then serves a batch that starts below the follower's end, which the
//     append refuses. Batches copied from leaders share boundaries, so this
//     needs a follower that led with different batching in the same range.
//   - Before Fetch v12 (no DivergingEpoch) the follower would have to ask
//     OffsetForLeaderEpoch first; the fetcher always sends v17, so only the
//     leader side of OffsetForLeaderEpoch is implemented (the truncation
//     rule, truncationOffset, is the one both paths use).
//   - The leader does not keep followers' log start offsets (Kafka uses
//     them for DeleteRecords' low watermark).
//   - A new leader starts from its own (follower) high watermark, which
//     may be below the previous leader's until the ISR has fetched: the
//     high watermark never decreases within a leader epoch, as in Kafka.
package replica
