// Package fetchsession is Kafka's incremental fetch sessions (KIP-227)
// at both ends: the broker's cache of sessions, which admits every Fetch
// request and decides which partitions it reads and answers, and the
// fetcher's half (Client), which decides which partitions a request
// names.
//
// # What it owns
//
//   - Cache: the sessions (max.incremental.fetch.session.cache.slots,
//     Kafka's 1000), their ids and epochs, Kafka's eviction (an unused
//     session past the eviction age goes first; otherwise a follower's
//     session may take a consumer's slot, and a larger session a smaller
//     one's once that one is older than the eviction age), the session
//     errors (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
//     FETCH_SESSION_TOPIC_ID_ERROR) and the counts of requests and
//     partitions per kind (sessionless, full, incremental).
//   - Session: each partition the fetcher reads, with what it asked and
//     what the last answer told it (high watermark, log start offset), and
//     Kafka's rule for which partitions an incremental answer carries:
//     records, a changed high watermark or log start offset, an error, a
//     divergence.
//   - What a request reads. Every partition of a session is watched: the
//     broker's partition holds a Source (16 bytes, by value), which
//     holds a Mark per session (two inline in one 32-byte object, more
//     and the broker's parked ShareFetches, as Wakers, in an overflow),
//     and calls MarkAll after any change a fetch could see. A request
//     reads the partitions marked since the last answer and those it
//     names itself, and, parked below MinBytes, only those marked while
//     it waited. Kafka's broker reads
//     every partition of the session on every request; here an idle
//     partition costs an incremental request nothing, so an idle
//     follower's fetch, which names nothing, reads nothing. A partition
//     whose answer carried records, an error or a divergence, or that had
//     records the byte budget left out, is read by the next request
//     even if nothing marks it, the starved ones before the served ones.
//     Sessionless and full requests use the same machinery for the length
//     of the request, so their parked re-reads follow what changed too.
//     A partition is watched only once its read is bound to it (a full
//     request's, once it parks or opens its session): a change between
//     the read and the watch marked nothing, so a watched session reads
//     it again, the parked request at once, else the next one. Without
//     this the change went unread until the next one, while the follower,
//     told there was nothing new, never named the partition again.
//   - Client: the fetcher's session with one broker (Kafka's
//     FetchSessionHandler): full requests that open a session,
//     incremental ones naming only the partitions whose data changed and
//     forgetting those no longer fetched, and the way back to a full
//     request after a session error or a lost answer. A follower's
//     fetcher holds every partition it follows from one leader, so the
//     Client keeps its partitions by value in chunks that never move
//     (32 bytes each for a follower's: the fetcher's value, names,
//     leader epoch, flags), found through one slotIndex (an
//     open-addressing table of 4-byte cells keyed by topic and
//     partition), a topic's name or id stored once: about 50 bytes per
//     followed partition, where a map of pointers to entries took about
//     145. What a partition never written asks (offset 0, no last
//     fetched epoch) is the Client's blank data with the partition's
//     leader epoch; any other's PartitionData is kept apart (32 bytes)
//     until the partition goes. A Session finds its entries (24 bytes each, the Source a pointer) through a
//     slotIndex too, not a dense array per topic (a follower's session
//     holds about a third of each topic's partitions at RF 3). An entry
//     of a partition never written (fetched at offset 0 with no last
//     fetched epoch, answered a high watermark and log start of 0)
//     holds only its names, its leader epoch and its Source, the rest
//     being the session's blank data; any other gets a 40-byte entryExt
//     with the data asked and the answers, until it is removed.
//
// # What it does not own
//
// Reading partitions, byte budgets, waiting and timeouts, and the
// response's per-partition fields: the broker does them (its Fetch
// handler and partitions) and tells the session each read's Outcome.
// The Client does not build Kafka requests: the fetcher (replica
// fetcher, Go consumer) turns its Plan into one.
//
// # The API the broker calls
//
//	f, code := cache.Begin(req, followerID, now)   // -1 for a consumer; code != 0: answer it, session id 0, no partitions
//	reads := f.Pending(nil)                        // read each; set Src to the partition read
//	f.Bind(reads)
//	parked: <-f.Wait() (with the timeout and the connection's context); reads = f.Pending(reads[:0]) ...
//	res := f.Finish(now, outcomeOf)                // res.SessionID, res.ErrorCode, res.Include in order
//
// and the broker's partition holds a Source (Read.Src points to it),
// to which sessions add and remove their Marks (Watch/Unwatch), the
// broker its parked ShareFetches (AddWaker/RemoveWaker); every change
// calls MarkAll, and a leader asks it when a follower last fetched
// (LastUsedBy).
//
// # Concurrency
//
// Lock order: Cache.mu, then a cached Session.mu; a new session's mu may
// be held while taking Cache.mu (it is in no one else's hands yet);
// Session.mu is held while calling a partition's Watch/Unwatch (which
// take the Source's own lock); Session.qmu, the queue of marked
// partitions, is a leaf taken under the partition's lock by Mark. No
// lock is held while the broker reads a partition or waits. A request
// admitted at the next epoch while an earlier one is still parked makes
// the earlier one answer INVALID_FETCH_SESSION_EPOCH, as Kafka does, and
// leaves what it read to the newer one. A Client is used by one
// goroutine.
//
// # Differences from Kafka
//
// One cache, not eight shards: max.incremental.fetch.session.cache.slots
// bounds the whole cache. The eviction age is Kafka's fixed 120 s. The
// order of partitions in an incremental answer is the order they were
// read (marked), not the session's. A follower broker's new session
// replaces the one it had (a weir follower fetches from a leader with
// one fetcher, and a session whose opening answer it lost would
// otherwise hold every partition it follows until evicted).
//
// # Tests
//
// Transcripts of the cache (testdata/cache: sessions opened, used,
// closed, errors, eviction, parked re-reads, rotation, the entry index
// over partition numbers far apart and negative, forgotten and named
// again) and the client (testdata/client); a Client's layout against the plain map it
// replaces, over random adds, deletes, re-adds, pauses, topics emptied
// and named again, and session resets (slots, index and topics checked
// after each step); a Client against a Cache through random changes,
// session errors, lost answers and evictions, checking after every
// answer that the broker's session holds exactly what the client
// believes (seeded, and a fuzz target).
package fetchsession
