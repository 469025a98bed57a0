// Package config holds weir's topic and broker configuration under
// Apache Kafka's names, types, defaults and validation rules, and answers
// DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for TOPIC and
// BROKER resources the way a Kafka 4.3 broker does.
//
// # What it owns
//
//   - The tables of configs (topic_defs.go, broker_defs.go): every topic
//     config of Kafka 4.3's LogConfig plus weir.sync.before.ack, and the
//     broker configs weir uses. Each entry has Kafka's type, default and
//     validator, a one-line description, and whether weir acts on it
//     (Honoured) or only validates, stores and describes it (Stored).
//     Adding a broker config is one table entry; Broker.Value, Int, Long,
//     Bool and Millis read it.
//   - Parsing and validation as Kafka's ConfigDef does it, with Kafka's
//     error texts ("Invalid value x for configuration retention.ms: Not a
//     number of type LONG", "Unknown topic config name: foo", ...).
//   - Topic defaults from broker settings (ServerTopicConfigSynonyms):
//     retention.ms comes from log.retention.ms, else log.retention.minutes,
//     else log.retention.hours; segment.ms from log.roll.ms or
//     log.roll.hours; flush.ms from log.flush.interval.ms or
//     log.flush.scheduler.interval.ms; and so on.
//   - The mapping of a topic's effective settings onto log.Config
//     (Topic.LogConfig) and of the broker's log.cleaner.* settings onto
//     cleaner.Config (Broker.Cleaner), with Kafka's rule for changing
//     log.cleaner.threads dynamically.
//   - DescribeConfigs semantics: effective values, read-only flags,
//     sources (DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
//     DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG),
//     synonyms in precedence order, sensitivity, v3+ config types and
//     documentation. Kafka's quirks are kept: synonyms are listed only from
//     the first entry for the config's own broker name, so a topic's
//     retention.ms shows log.retention.hours only once log.retention.ms is
//     set somewhere; unknown broker keys are sensitive and read-only.
//   - AlterConfigs (replace all of a resource's overrides) and
//     IncrementalAlterConfigs (SET, DELETE, APPEND, SUBTRACT) as pure
//     functions from current overrides and request entries to new
//     overrides or a Kafka error: INVALID_CONFIG for topic validation,
//     INVALID_REQUEST for malformed resources and for every BROKER
//     validation failure (as Kafka answers since KAFKA-13609).
//   - Listener security configs (security_defs.go): listeners,
//     inter.broker.listener.name, controller.listener.names, SASL and TLS
//     settings, each also settable for one listener as
//     listener.name.<listener>.<config> and, for SASL ones, per mechanism
//     as listener.name.<listener>.<mechanism>.<config>
//     (ListenerValue, ListenerMechanismValue), with Kafka's start-up
//     checks across them and its rule that keystores and truststores
//     change only per broker. internal/auth turns them into each
//     listener's security.
//   - A server.properties reader (Java properties syntax) whose errors
//     name file, line and key, and whose unknown keys come back as
//     warnings for the caller to log.
//
// # What it does not own
//
// Storing overrides (the metadata log); topic name and existence checks,
// ValidateOnly, forwarding a change to the controller, the settings in
// force and GROUP resources (internal/configadmin, the config service,
// which validates first and checks existence after, because Kafka
// reports a bad config before an unknown topic); authorization; applying
// configs to running partitions (the broker); BROKER_LOGGER and
// CLIENT_METRICS resources.
//
// # How the config service and the broker use it
//
//	p, err := config.ReadPropertiesFile(path)    // weir serve --config
//	p.Set(config.Listeners, proto+"://"+addr)    // --listen wins over the file
//	p.SetDefault(config.NodeID, "1")             // node.id is required
//	b, warnings, err := config.LoadBroker(p)     // log each warning
//
//	// DescribeConfigs (32), per resource:
//	entries, e := b.DescribeTopic(storedOverrides, opts) // after name and existence checks
//	entries, e := b.DescribeBroker(resourceName, opts)
//	// IncrementalAlterConfigs (44) / AlterConfigs (33), per resource:
//	next, e := b.IncrementalAlterTopic(storedOverrides, resource.Configs)
//	next, e := b.IncrementalAlterBroker(resourceName, resource.Configs)
//	// unless ValidateOnly: store next; for BROKER, republish
//	// b.WithDynamic(clusterDefault, node) once the change is stored.
//	// CreateTopics (19): overrides, e := b.CreateTopicOverrides(topic.Configs)
//	// Partition logs: t, _ := b.Topic(overrides); log.Open(dir, t.LogConfig(), ...)
//
// A nil *Error means success; otherwise its Code and Message go into the
// resource's ErrorCode and ErrorMessage.
//
// # Where weir differs on purpose
//
//   - compression.type and its levels are stored and described as set,
//     but batches are always kept exactly as the producer compressed them.
//   - Without delete in cleanup.policy no retention applies, as in
//     Kafka; with compact the log cleaner (internal/cleaner) compacts the
//     topic, with the topic's delete.retention.ms, min/max.compaction.lag.ms
//     and min.cleanable.dirty.ratio and the broker's log.cleaner.*
//     settings (Broker.Cleaner).
//   - remote.storage.enable=true is refused with Kafka's message for a
//     cluster whose tiered storage is off; weir has none.
//   - listeners and advertised.listeners are read-only (Kafka lets a node
//     change them per broker).
//   - Properties files are read as UTF-8 (Java reads ISO-8859-1); config
//     providers and ${...} references are not expanded; CLASS values can
//     never be loaded.
//   - Described entries are sorted by name; Kafka's order is a hash order
//     that clients do not rely on.
//   - KIP-1241's remote.copy.lag.ms and remote.copy.lag.bytes (after 4.3)
//     are not defined yet.
//
// # Why kmsg types
//
// Describe results are kmsg.DescribeConfigsResponseResourceConfig values
// and alter inputs are the request's kmsg entry types. They are generated
// from Kafka's own message definitions, so the enums (ConfigSource,
// ConfigType, IncrementalAlterConfigOp) carry Kafka's numbers and the
// handler copies results into the response without a mapping layer that
// could drift. The package still does no I/O besides ReadPropertiesFile.
//
// # Concurrency
//
// Everything is immutable after construction. A Broker never changes:
// WithDynamic returns a new one, so its owner can publish it through an
// atomic pointer and any goroutine may read it. The definition tables are
// built once at package initialisation and only read afterwards.
package config
