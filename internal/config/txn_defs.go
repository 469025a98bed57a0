package config

// Transaction coordinator and producer-state configs.
const (
	TransactionMaxTimeout           = "transaction.max.timeout.ms"
	TransactionalIDExpiration       = "transactional.id.expiration.ms"
	TransactionAbortInterval        = "transaction.abort.timed.out.transaction.cleanup.interval.ms"
	TransactionExpirationInterval   = "transaction.remove.expired.transaction.cleanup.interval.ms"
	TransactionStatePartitions      = "transaction.state.log.num.partitions"
	TransactionStateReplication     = "transaction.state.log.replication.factor"
	TransactionStateMinISR          = "transaction.state.log.min.isr"
	TransactionStateSegmentBytes    = "transaction.state.log.segment.bytes"
	TransactionPartitionVerify      = "transaction.partition.verification.enable"
	ProducerIDExpiration            = "producer.id.expiration.ms"
	ProducerIDExpirationCheckPeriod = "producer.id.expiration.check.interval.ms"
)

// txnDefs are the transaction configs, with Kafka 4.3's defaults.
var txnDefs = []Def{
	{Name: TransactionMaxTimeout, Type: Int, Default: "900000", valid: atLeast(1), Support: Honoured, Doc: "Largest transaction.timeout.ms a transactional producer may ask for; InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it."},
	{Name: TransactionalIDExpiration, Type: Int, Default: "604800000", valid: atLeast(1), Support: Honoured, Doc: "A transactional id with no transaction for this long is forgotten by its coordinator."},
	{Name: TransactionAbortInterval, Type: Int, Default: "10000", valid: atLeast(1), Support: Honoured, Doc: "How often the transaction coordinator aborts transactions older than their timeout."},
	{Name: TransactionExpirationInterval, Type: Int, Default: "3600000", valid: atLeast(1), Support: Honoured, Doc: "How often the transaction coordinator removes transactional ids past transactional.id.expiration.ms."},
	{Name: TransactionStatePartitions, Type: Int, Default: "50", valid: atLeast(1), Support: Honoured, Doc: "Partitions of __transaction_state; fixed once the topic exists."},
	{Name: TransactionStateReplication, Type: Short, Default: "3", valid: atLeast(1), Support: Honoured, Doc: "Replication factor of __transaction_state (capped at the number of brokers)."},
	{Name: TransactionStateMinISR, Type: Int, Default: "2", valid: atLeast(1), Support: Honoured, Doc: "min.insync.replicas of __transaction_state (capped at its replication factor)."},
	{Name: TransactionStateSegmentBytes, Type: Int, Default: "104857600", valid: atLeast(1), Support: Honoured, Doc: "segment.bytes of __transaction_state."},
	{Name: "transaction.state.log.load.buffer.size", Type: Int, Default: "5242880", valid: atLeast(1), Support: Stored, Doc: "Read size when loading __transaction_state."},
	{Name: TransactionPartitionVerify, Type: Boolean, Default: "true", Dynamic: true, Support: Honoured, Doc: "KIP-890: a partition leader asks the transaction coordinator whether a transactional batch's partition is in its transaction before appending it."},
	{Name: ProducerIDExpiration, Type: Int, Default: "86400000", valid: atLeast(1), Dynamic: true, Support: Honoured, Doc: "A producer id idle for this long, with no transaction open, is forgotten by each partition."},
	{Name: ProducerIDExpirationCheckPeriod, Type: Int, Default: "600000", valid: atLeast(1), Support: Honoured, Doc: "How often partitions forget expired producer ids."},
}
