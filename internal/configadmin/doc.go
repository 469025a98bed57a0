// Package configadmin is one node's config service: the part of Kafka's
// broker that serves config resources over internal/config's rules.
//
// # What it owns
//
//   - The settings in force (Manager.Settings): the static configuration
//     with the dynamic broker configs last applied from the metadata image
//     (ApplyBrokerConfigs), the cluster-wide defaults and this node's, as
//     Kafka's DynamicBrokerConfig keeps them.
//   - DescribeConfigs (Describe), Kafka's ConfigHelper: TOPIC and BROKER
//     resources with their values, sources, synonyms and documentation,
//     GROUP resources through GroupConfigs; a topic's name is checked
//     before its existence. And the configs of a new topic for
//     CreateTopics v5+ (CreateTopicConfigs).
//   - The checks of AlterConfigs and IncrementalAlterConfigs before they
//     are forwarded (Alter, IncrementalAlter), Kafka's ConfigAdminManager:
//     each resource against this node's copy, answered at once with
//     Kafka's code and in Kafka's order (INVALID_TOPIC_EXCEPTION for a
//     name no topic can have, then INVALID_CONFIG for a bad topic config,
//     then UNKNOWN_TOPIC_OR_PARTITION; INVALID_REQUEST for a bad broker
//     config or an unsupported resource type); what passes is forwarded
//     as asked (the operations, or a legacy AlterConfigs' whole new set),
//     never as a difference computed from this node's copy, which may
//     lag. Forward.Decide answers once this node has applied the
//     committed outcome, so the client's next request here sees it.
//   - The active controller's ConfigPolicy (Policy): the same rules
//     applied to the configs the controller holds.
//
// # What it does not own
//
// Config names, defaults, validation and describe semantics
// (internal/config); the configs' storage and the decision's ordering
// (internal/controller, the metadata log); topic existence and the
// overrides a node holds, the controller client, the metadata loop and
// applying a topic's settings to its partition logs (the broker, through
// Host); GROUP resources' rules (GroupConfigs, internal/sharegroup); the
// wire (the broker's handlers 32, 33 and 44 call Describe, Alter and
// IncrementalAlter and run Forward.Decide off the request path).
//
// # How the broker uses it
//
//	m := configadmin.New(configadmin.Options{NodeID: id, Static: settings, Host: host})
//	st := m.Settings()                    // anywhere, any goroutine
//	resp := m.Describe(req)               // DescribeConfigs
//	resp, fwd := m.IncrementalAlter(req)  // or m.Alter(req)
//	if fwd != nil { go fwd.Decide(ctx) }  // completes resp
//	controller.Config{Configs: m.Policy()}
//	// metadata loop, on each update holding broker configs:
//	prev, next, changed := m.ApplyBrokerConfigs(img)
//
// # Concurrency
//
// The settings in force are an immutable *config.Broker behind an atomic
// pointer: any goroutine reads them; ApplyBrokerConfigs, their only
// writer, is called by one goroutine (the broker's metadata loop).
// Describe, the checks and the Policy read one snapshot of the settings
// per request and hold no lock. A Forward is used by one goroutine; it
// blocks on the controller and the host's WaitApplied, bounded by its
// context and Options.Timeout. The package starts no goroutine.
package configadmin
