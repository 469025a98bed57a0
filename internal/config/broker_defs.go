package config

// Broker config names weir reads directly.
const (
	NodeID                    = "node.id"
	Listeners                 = "listeners"
	AdvertisedListeners       = "advertised.listeners"
	ListenerSecurityMap       = "listener.security.protocol.map"
	LogDirs                   = "log.dirs"
	LogDir                    = "log.dir"
	NumPartitions             = "num.partitions"
	DefaultReplicationFactor  = "default.replication.factor"
	AutoCreateTopics          = "auto.create.topics.enable"
	LogRetentionCheckInterval = "log.retention.check.interval.ms"
	MessageMaxBytes           = "message.max.bytes"
	SocketRequestMaxBytes     = "socket.request.max.bytes"
	ConnectionsMaxIdle        = "connections.max.idle.ms"
	OffsetsTopicPartitions    = "offsets.topic.num.partitions"
	OffsetsTopicReplication   = "offsets.topic.replication.factor"
	OffsetsTopicSegmentBytes  = "offsets.topic.segment.bytes"
	ShareStateSegmentBytes    = "share.coordinator.state.topic.segment.bytes"
	GroupInitialRebalance     = "group.initial.rebalance.delay.ms"
	GroupMinSessionTimeout    = "group.min.session.timeout.ms"
	GroupMaxSessionTimeout    = "group.max.session.timeout.ms"
	GroupMaxSize              = "group.max.size"
	GroupConsumerSession      = "group.consumer.session.timeout.ms"
	GroupConsumerHeartbeat    = "group.consumer.heartbeat.interval.ms"
	GroupStreamsSession       = "group.streams.session.timeout.ms"
	GroupStreamsHeartbeat     = "group.streams.heartbeat.interval.ms"
	GroupStreamsStandbys      = "group.streams.num.standby.replicas"
	GroupStreamsMaxSize       = "group.streams.max.size"
	BrokerRack                = "broker.rack"
	ReplicaLagTimeMax         = "replica.lag.time.max.ms"
	CleanerEnable             = "log.cleaner.enable"
	CleanerThreads            = "log.cleaner.threads"
	CleanerDedupeBufferSize   = "log.cleaner.dedupe.buffer.size"
	CleanerIOBufferSize       = "log.cleaner.io.buffer.size"
	CleanerIOBufferLoadFactor = "log.cleaner.io.buffer.load.factor"
	CleanerIOMaxBytesPerSec   = "log.cleaner.io.max.bytes.per.second"
	CleanerBackoffMs          = "log.cleaner.backoff.ms"
	AuthorizerClassName       = "authorizer.class.name"
	SuperUsers                = "super.users"
	AllowEveryoneIfNoACL      = "allow.everyone.if.no.acl.found"
	QuotaWindowNum            = "quota.window.num"
	QuotaWindowSizeSeconds    = "quota.window.size.seconds"
	FetchSessionCacheSlots    = "max.incremental.fetch.session.cache.slots"
	// weir's own broker configs.
	WeirLogSyncBeforeAck   = "weir.log.sync.before.ack"
	WeirLogBackgroundSync  = "weir.log.background.sync"
	WeirLogPreallocate     = "weir.log.preallocate"
	WeirLogCleanerNice     = "weir.log.cleaner.nice"
	WeirLogMaxOpenFiles    = "weir.log.max.open.files"
	FaultProduceResponseMs = "weir.fault.produce.response.delay.ms"
	FaultFetchResponseMs   = "weir.fault.fetch.response.delay.ms"
	// The concurrent variants delay each response on its own, however
	// many of the connection's requests are waiting.
	FaultProduceResponseConcurrentMs = "weir.fault.produce.response.delay.concurrent.ms"
	FaultFetchResponseConcurrentMs   = "weir.fault.fetch.response.delay.concurrent.ms"
	LeaderHints                      = "weir.leader.hints.enable"
	LivenessProbeMs                  = "weir.broker.liveness.probe.ms"
	ShareFetchElsewhereWaitMs        = "weir.share.fetch.elsewhere.wait.ms"
)

// brokerDefs are the broker configs weir knows, with Kafka 4.3's types,
// defaults, validators and dynamic-update rules. Adding one is one entry;
// Broker.Value reads any of them. Dynamic ones are those Kafka lets
// (Incremental)AlterConfigs change; everything else is read-only.
var brokerDefs = newDefSet(append(append(coreBrokerDefs, securityDefs...), txnDefs...))

var coreBrokerDefs = []Def{
	// Identity and network.
	{Name: NodeID, Type: Int, Default: "-1", Support: Honoured, Doc: "This node's id; required, and the BROKER resource name of its configs."},
	{Name: Listeners, Type: String, Default: "PLAINTEXT://:9092", Support: Honoured, Doc: "Comma-separated NAME://host:port addresses to listen on; weir serve --listen overrides it."},
	{Name: AdvertisedListeners, Type: String, NullDefault: true, Support: Honoured, Doc: "Addresses given to clients in metadata, when they differ from listeners."},
	{Name: ListenerSecurityMap, Type: String, Default: "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", Support: Honoured, Doc: "Security protocol of each listener name."},
	{Name: BrokerRack, Type: String, NullDefault: true, Support: Honoured, Doc: "Rack of this broker, used for rack-aware placement and reported in metadata."},
	{Name: SocketRequestMaxBytes, Type: Int, Default: "104857600", valid: atLeast(1), Support: Honoured, Doc: "Largest request frame accepted."},
	{Name: ConnectionsMaxIdle, Type: Long, Default: "600000", Support: Honoured, Doc: "A connection that sends no request for this long, with none unanswered, is closed; 0 or less keeps idle connections open."},

	// Log directories and topic defaults.
	{Name: LogDirs, Type: List, NullDefault: true, valid: listOf{anyStrings: true, nullOK: true}, Support: Honoured, Doc: "Directories holding partition data; log.dir is used when unset."},
	{Name: LogDir, Type: List, Default: "/tmp/kafka-logs", valid: listOf{anyStrings: true}, Support: Honoured, Doc: "Directory holding partition data when log.dirs is unset."},
	{Name: NumPartitions, Type: Int, Default: "1", valid: atLeast(1), Support: Honoured, Doc: "Partitions of an auto-created topic, or of a created one that asks for -1."},
	{Name: DefaultReplicationFactor, Type: Int, Default: "1", Support: Honoured, Doc: "Replication factor of an auto-created topic, or of a created one that asks for -1."},
	{Name: AutoCreateTopics, Type: Boolean, Default: "true", Support: Honoured, Doc: "Create a topic when a client asks for metadata of one that does not exist."},
	{Name: LogRetentionCheckInterval, Type: Long, Default: "300000", valid: atLeast(1), Support: Honoured, Doc: "How often partitions are checked for segments past retention."},

	// Defaults of topic configs (the topic config's synonyms).
	{Name: "log.segment.bytes", Type: Int, Default: "1073741824", valid: atLeast(1 << 20), Dynamic: true, Support: Honoured, Doc: "Default segment.bytes."},
	{Name: "log.roll.ms", Type: Long, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Default segment.ms; log.roll.hours is used when unset."},
	{Name: "log.roll.hours", Type: Int, Default: "168", valid: atLeast(1), Support: Honoured, Doc: "Default segment.ms in hours, below log.roll.ms."},
	{Name: "log.roll.jitter.ms", Type: Long, NullDefault: true, Dynamic: true, Support: Stored, Doc: "Default segment.jitter.ms; log.roll.jitter.hours is used when unset."},
	{Name: "log.roll.jitter.hours", Type: Int, Default: "0", valid: atLeast(0), Support: Stored, Doc: "Default segment.jitter.ms in hours, below log.roll.jitter.ms."},
	{Name: "log.retention.ms", Type: Long, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Default retention.ms; log.retention.minutes then log.retention.hours are used when unset; -1 keeps data forever."},
	{Name: "log.retention.minutes", Type: Int, NullDefault: true, Support: Honoured, Doc: "Default retention.ms in minutes, below log.retention.ms."},
	{Name: "log.retention.hours", Type: Int, Default: "168", Support: Honoured, Doc: "Default retention.ms in hours, below log.retention.minutes."},
	{Name: "log.retention.bytes", Type: Long, Default: "-1", Dynamic: true, Support: Honoured, Doc: "Default retention.bytes."},
	{Name: "log.index.size.max.bytes", Type: Int, Default: "10485760", valid: atLeast(4), Dynamic: true, Support: Stored, Doc: "Default segment.index.bytes."},
	{Name: "log.index.interval.bytes", Type: Int, Default: "4096", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default index.interval.bytes."},
	{Name: "log.flush.interval.messages", Type: Long, Default: maxLong, valid: atLeast(1), Dynamic: true, Support: Honoured, Doc: "Default flush.messages."},
	{Name: "log.flush.interval.ms", Type: Long, NullDefault: true, Dynamic: true, Support: Honoured, Doc: "Default flush.ms; log.flush.scheduler.interval.ms is used when unset."},
	{Name: "log.flush.scheduler.interval.ms", Type: Long, Default: maxLong, Support: Honoured, Doc: "Default flush.ms below log.flush.interval.ms."},
	{Name: "log.segment.delete.delay.ms", Type: Long, Default: "60000", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default file.delete.delay.ms."},
	{Name: "log.cleanup.policy", Type: List, Default: "delete", valid: listOf{allowed: oneOf{"compact", "delete"}, emptyOK: true}, Dynamic: true, Support: Honoured, Doc: "Default cleanup.policy."},
	{Name: "log.cleaner.delete.retention.ms", Type: Long, Default: "86400000", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default delete.retention.ms."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: Long, Default: "0", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default min.compaction.lag.ms."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: Long, Default: maxLong, valid: atLeast(1), Dynamic: true, Support: Honoured, Doc: "Default max.compaction.lag.ms."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: Double, Default: "0.5", valid: between(0, 1), Dynamic: true, Support: Honoured, Doc: "Default min.cleanable.dirty.ratio."},

	// The log cleaner.
	{Name: CleanerEnable, Type: Boolean, Default: "true", Support: Honoured, Doc: "Run the log cleaner, which compacts topics whose cleanup.policy includes compact (the internal topics among them); without it they grow forever."},
	{Name: CleanerThreads, Type: Int, Default: "1", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Workers cleaning logs at once; a change may at most double or halve it."},
	{Name: CleanerDedupeBufferSize, Type: Long, Default: "134217728", Dynamic: true, Support: Honoured, Doc: "Memory of the cleaner's key maps, all workers together; at 16 bytes a key, each round of a worker covers up to its share divided by 16, times the load factor, distinct keys."},
	{Name: CleanerIOBufferSize, Type: Int, Default: "524288", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Read buffers of the cleaner's workers together; a larger batch grows a worker's buffer."},
	{Name: CleanerIOBufferLoadFactor, Type: Double, Default: "0.9", Dynamic: true, Support: Honoured, Doc: "How full a cleaner key map may get."},
	{Name: CleanerIOMaxBytesPerSec, Type: Double, Default: "1.7976931348623157E308", Dynamic: true, Support: Honoured, Doc: "Read and write I/O of the cleaner, all workers together, on average."},
	{Name: CleanerBackoffMs, Type: Long, Default: "15000", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "How long an idle cleaner worker waits before it looks for a dirty log again."},
	{Name: "log.preallocate", Type: Boolean, Default: "false", Dynamic: true, Support: Stored, Doc: "Default preallocate."},
	{Name: "log.message.timestamp.type", Type: String, Default: "CreateTime", valid: oneOf{"CreateTime", "LogAppendTime"}, Dynamic: true, Support: Honoured, Doc: "Default message.timestamp.type."},
	{Name: "log.message.timestamp.before.max.ms", Type: Long, Default: maxLong, valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default message.timestamp.before.max.ms."},
	{Name: "log.message.timestamp.after.max.ms", Type: Long, Default: "3600000", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default message.timestamp.after.max.ms."},
	{Name: "log.local.retention.ms", Type: Long, Default: "-2", valid: atLeast(-2), Dynamic: true, Support: Stored, Doc: "Default local.retention.ms."},
	{Name: "log.local.retention.bytes", Type: Long, Default: "-2", valid: atLeast(-2), Dynamic: true, Support: Stored, Doc: "Default local.retention.bytes."},
	{Name: MessageMaxBytes, Type: Int, Default: "1048588", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "Default max.message.bytes."},
	{Name: "compression.type", Type: String, Default: "producer", valid: compressionTypes, Dynamic: true, Support: Stored, Doc: "Default compression.type; weir stores batches as produced."},
	{Name: "compression.gzip.level", Type: Int, Default: "-1", valid: gzipLevel{}, Dynamic: true, Support: Stored, Doc: "Default compression.gzip.level."},
	{Name: "compression.lz4.level", Type: Int, Default: "9", valid: between(1, 17), Dynamic: true, Support: Stored, Doc: "Default compression.lz4.level."},
	{Name: "compression.zstd.level", Type: Int, Default: "3", valid: between(-131072, 22), Dynamic: true, Support: Stored, Doc: "Default compression.zstd.level."},
	{Name: "min.insync.replicas", Type: Int, Default: "1", valid: atLeast(1), Dynamic: true, Support: Honoured, Doc: "Default min.insync.replicas."},
	{Name: "unclean.leader.election.enable", Type: Boolean, Default: "false", Dynamic: true, Support: Honoured, Doc: "Default unclean.leader.election.enable."},

	// Group coordinator.
	{Name: OffsetsTopicPartitions, Type: Int, Default: "50", valid: atLeast(1), Support: Honoured, Doc: "Partitions of the committed-offsets topic; fixed once the topic exists."},
	{Name: OffsetsTopicReplication, Type: Short, Default: "3", valid: atLeast(1), Support: Honoured, Doc: "Replication factor of the committed-offsets topic."},
	{Name: OffsetsTopicSegmentBytes, Type: Int, Default: "104857600", valid: atLeast(1), Support: Honoured, Doc: "segment.bytes of the committed-offsets topic when it is created: the log cleaner compacts its closed segments."},
	{Name: ShareStateSegmentBytes, Type: Int, Default: "104857600", valid: atLeast(1), Support: Honoured, Doc: "segment.bytes of __share_group_state when it is created."},
	{Name: GroupInitialRebalance, Type: Int, Default: "3000", Support: Honoured, Doc: "How long the first rebalance of an empty classic group waits for more members."},
	{Name: GroupMinSessionTimeout, Type: Int, Default: "6000", Support: Honoured, Doc: "Smallest session timeout a classic group member may ask for."},
	{Name: GroupMaxSessionTimeout, Type: Int, Default: "1800000", Support: Honoured, Doc: "Largest session timeout a classic group member may ask for."},
	{Name: GroupMaxSize, Type: Int, Default: "2147483647", valid: atLeast(1), Support: Honoured, Doc: "Most members a classic or consumer group may have (GROUP_MAX_SIZE_REACHED beyond)."},
	{Name: GroupConsumerSession, Type: Int, Default: "45000", valid: atLeast(1), Support: Honoured, Doc: "How long a consumer group (KIP-848) member may go without a heartbeat before it is removed."},
	{Name: GroupConsumerHeartbeat, Type: Int, Default: "5000", valid: atLeast(1), Support: Honoured, Doc: "How often consumer group (KIP-848) members heartbeat."},
	{Name: GroupStreamsSession, Type: Int, Default: "45000", valid: atLeast(1), Support: Honoured, Doc: "How long a streams group member may go without a heartbeat before it is removed."},
	{Name: GroupStreamsHeartbeat, Type: Int, Default: "5000", valid: atLeast(1), Support: Honoured, Doc: "How often streams group members heartbeat."},
	{Name: GroupStreamsStandbys, Type: Int, Default: "0", valid: atLeast(0), Support: Honoured, Doc: "Standby replicas of each stateful task the streams group assignor places on other processes."},
	{Name: GroupStreamsMaxSize, Type: Int, Default: "2147483647", valid: atLeast(1), Support: Honoured, Doc: "Most members a streams group may have (GROUP_MAX_SIZE_REACHED beyond)."},

	// Authorization and client quotas (internal/authz, internal/quota).
	{Name: AuthorizerClassName, Type: String, Default: "", valid: oneOf{"", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}, Support: Honoured, Doc: "The authorizer: Kafka's StandardAuthorizer (ACLs in the metadata log, deny by default), or none (every request allowed)."},
	{Name: SuperUsers, Type: String, NullDefault: true, Support: Honoured, Doc: "Principals allowed everything, whatever the ACLs say, separated by ';' (User:admin;User:broker)."},
	{Name: AllowEveryoneIfNoACL, Type: Boolean, Default: "false", Support: Honoured, Doc: "Allow an operation on a resource no ACL names at all; false denies it (deny by default)."},
	{Name: QuotaWindowNum, Type: Int, Default: "11", valid: atLeast(1), Support: Honoured, Doc: "How many windows a client's rate is measured over, for client quotas."},
	{Name: QuotaWindowSizeSeconds, Type: Int, Default: "1", valid: atLeast(1), Support: Honoured, Doc: "The length of one window of client-quota rates, in seconds."},

	// weir's own.
	{Name: WeirLogSyncBeforeAck, Type: Boolean, Default: "false", Dynamic: true, Support: Honoured, Doc: "weir: default weir.sync.before.ack."},
	{Name: WeirLogBackgroundSync, Type: Boolean, Default: "true", Dynamic: true, Support: Honoured, Doc: "weir: default weir.background.sync."},
	{Name: WeirLogPreallocate, Type: Boolean, Default: "true", Dynamic: true, Support: Honoured, Doc: "weir: default weir.preallocate."},
	{Name: WeirLogMaxOpenFiles, Type: Int, Default: "0", valid: atLeast(0), Support: Honoured, Doc: "weir: the most segment files the broker's logs keep open; files of idle segments are closed and reopened on use, so a broker may host more partitions than file descriptors. 0: half the process's RLIMIT_NOFILE (raised to the hard limit at start), leaving the rest to connections."},
	{Name: WeirLogCleanerNice, Type: Int, Default: "19", valid: between(0, 19), Dynamic: true, Support: Honoured, Doc: "weir: the CPU priority (nice, 0 to 19) of each log cleaner worker, run on an OS thread of its own, so that the kernel runs produce and fetch first when they and the cleaner want the same core. 0 leaves the workers at the broker's priority; where the platform refuses it the workers run as they are (logged once)."},
	{Name: FaultProduceResponseMs, Type: Long, Default: "0", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "weir fault injection: a slow broker, as a Kafka broker that takes this many milliseconds longer over each produce request: a connection's produce responses go out one after another, each this many milliseconds after the later of its own completion and the connection's previous delayed response (Kafka handles one request per connection at a time)."},
	{Name: FaultProduceResponseConcurrentMs, Type: Long, Default: "0", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "weir fault injection: delay every produce response by this many milliseconds, each on its own (a connection with five requests in flight has five delays running at once)."},
	{Name: FetchSessionCacheSlots, Type: Int, Default: "1000", valid: atLeast(0), Support: Honoured, Doc: "The most incremental fetch sessions (KIP-227) the broker keeps; beyond it a new session evicts an unused, a consumer's or a smaller one as Kafka does, or none is opened and that fetcher's requests stay full."},
	{Name: ReplicaLagTimeMax, Type: Long, Default: "30000", valid: atLeast(1), Support: Honoured, Doc: "A follower that has not caught up with its leader's log end for this long leaves the ISR."},
	{Name: ShareFetchElsewhereWaitMs, Type: Long, Default: "10", valid: atLeast(-1), Dynamic: true, Support: Honoured, Doc: "An empty record_limit ShareFetch whose topics have partitions led by other brokers is answered after at most this many milliseconds instead of its MaxWaitMs, so a record_limit share consumer (which takes records from one broker at a time) moves on to brokers that have records. batch_optimized fetches keep their MaxWaitMs. -1 turns this off."},
	{Name: LivenessProbeMs, Type: Long, Default: "200", valid: atLeast(0), Support: Honoured, Doc: "How often the active controller's node probes every unfenced broker's listener; a broker whose listener refuses connections twice in a row is fenced at once instead of after broker.session.timeout.ms. 0 turns probing off."},
	{Name: LeaderHints, Type: Boolean, Default: "true", Dynamic: true, Support: Honoured, Doc: "KIP-951: Produce and Fetch answers that fail with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH name the new leader and its endpoint. false leaves clients to refresh metadata, for comparisons."},
	{Name: FaultFetchResponseMs, Type: Long, Default: "0", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "weir fault injection: as weir.fault.produce.response.delay.ms, for fetch responses (followers' fetches included): each connection's fetch responses go out one after another, each this many milliseconds late."},
	{Name: FaultFetchResponseConcurrentMs, Type: Long, Default: "0", valid: atLeast(0), Dynamic: true, Support: Honoured, Doc: "weir fault injection: delay every fetch response by this many milliseconds, each on its own."},
}
