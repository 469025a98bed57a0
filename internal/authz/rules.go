package authz

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Scope is how a denied check answers.
type Scope uint8

// The scopes.
const (
	// Whole: the request answers the error (wherever its response
	// carries an error code) and nothing of it is served.
	Whole Scope = iota
	// PerItem: the items named by denied resources (topics, groups,
	// partitions, keys, ACLs) answer the error and are not served; the
	// others are.
	PerItem
	// Hidden: the items are served but left out of the answer, so that
	// their existence is not told (all-topics Metadata, ListGroups); with
	// an error, what is hidden is replaced by it (a described group's
	// members, a created topic's configs).
	Hidden
)

func (s Scope) String() string { return [...]string{"whole request", "per item", "hidden"}[s] }

// Grant is one operation on one type of resource.
type Grant struct {
	Op       Operation
	Resource ResourceType
}

// Check is one authorization Kafka makes for an API.
type Check struct {
	Grant
	// Or lists grants that pass the check instead (CREATE on the
	// cluster instead of on each topic).
	Or []Grant
	// Names says which resource the request names for the check.
	Names string
	// When is the condition under which Kafka checks; "" for always.
	When string
	// Error is the code a denial answers with; nil when the denied items
	// are only hidden.
	Error *kerr.Error
	Scope Scope
}

// API is what Kafka checks for one API.
type API struct {
	Key    int16
	Checks []Check
	// Also notes what authorization adds to an allowed answer
	// (authorized operations, hidden details).
	Also string
}

func check(op Operation, rt ResourceType, names string, e *kerr.Error, s Scope) Check {
	return Check{Grant: Grant{op, rt}, Names: names, Error: e, Scope: s}
}

func (c Check) or(g ...Grant) Check    { c.Or = g; return c }
func (c Check) when(cond string) Check { c.When = cond; return c }
func cluster(op Operation) Grant       { return Grant{op, ResourceCluster} }
func onTopic(op Operation) Grant       { return Grant{op, ResourceTopic} }
func onGroup(op Operation) Grant       { return Grant{op, ResourceGroup} }
func clusterCheck(op Operation) Check {
	return check(op, ResourceCluster, ClusterName, errCluster, Whole)
}
func groupCheck(op Operation) Check { return check(op, ResourceGroup, "the group", errGroup, Whole) }
func topicsCheck(op Operation) Check {
	return check(op, ResourceTopic, "each topic", errTopic, PerItem)
}
func groupsCheck(op Operation) Check {
	return check(op, ResourceGroup, "each group", errGroup, PerItem)
}
func subscribedCheck() Check {
	return check(OpDescribe, ResourceTopic, "each subscribed topic", errTopic, Whole)
}
func assignedCheck() Check {
	return check(OpDescribe, ResourceTopic, "each assigned topic", errTopic, Hidden)
}
func txnCheck(op Operation, s Scope) Check {
	return check(op, ResourceTransactionalID, "the transactional id", errTxn, s)
}

// APIs is what Kafka 4.3 checks for every API weir serves, in key
// order: the data behind the functions of this package, one per API
// (Produce, Fetch, ...), which Authorize dispatches to. APIs without a
// check (ApiVersions, SaslHandshake, SaslAuthenticate) have no checks.
var APIs = []API{
	{Key: 0, Checks: []Check{
		txnCheck(OpWrite, Whole).when("the batches are transactional"),
		check(OpWrite, ResourceTopic, "each topic", errTopic, PerItem)}},
	{Key: 1, Checks: []Check{
		check(OpClusterAction, ResourceCluster, ClusterName, errTopic, PerItem).when("a follower fetches"),
		check(OpRead, ResourceTopic, "each topic", errTopic, PerItem).when("a consumer fetches")}},
	{Key: 2, Checks: []Check{topicsCheck(OpDescribe)}},
	{Key: 3, Checks: []Check{
		topicsCheck(OpDescribe).when("topics are named"),
		check(OpDescribe, ResourceTopic, "each topic", nil, Hidden).when("every topic is asked for"),
		check(OpCreate, ResourceTopic, "each topic to create", errTopic, PerItem).or(cluster(OpCreate)).when("topics would be auto-created")},
		Also: "authorized operations of the cluster (v8-v10; 0 without DESCRIBE on it) and of each topic, when asked"},
	{Key: 8, Checks: []Check{groupCheck(OpRead), topicsCheck(OpRead)}},
	{Key: 9, Checks: []Check{
		groupsCheck(OpDescribe),
		topicsCheck(OpDescribe).when("topics are named"),
		check(OpDescribe, ResourceTopic, "each topic", nil, Hidden).when("all of a group's offsets are asked for")}},
	{Key: 10, Checks: []Check{
		check(OpDescribe, ResourceGroup, "each key", errGroup, PerItem).when("group keys (the whole request before v4)"),
		check(OpDescribe, ResourceTransactionalID, "each key", errTxn, PerItem).when("transactional keys (the whole request before v4)"),
		clusterCheck(OpClusterAction).when("share keys")}},
	{Key: 11, Checks: []Check{groupCheck(OpRead)}},
	{Key: 12, Checks: []Check{groupCheck(OpRead)}},
	{Key: 13, Checks: []Check{groupCheck(OpRead)}},
	{Key: 14, Checks: []Check{groupCheck(OpRead)}},
	{Key: 15, Checks: []Check{groupsCheck(OpDescribe)}, Also: "authorized operations of each group described, when asked (v3+)"},
	{Key: 16, Checks: []Check{check(OpDescribe, ResourceGroup, "each group", nil, Hidden).or(cluster(OpDescribe))}},
	{Key: 17},
	{Key: 18},
	{Key: 19, Checks: []Check{
		topicsCheck(OpCreate).or(cluster(OpCreate)),
		check(OpDescribeConfigs, ResourceTopic, "each topic created", errTopic, Hidden)},
		Also: "without DESCRIBE_CONFIGS a created topic's configs, partitions and replication factor are hidden (config error TOPIC_AUTHORIZATION_FAILED)"},
	{Key: 20, Checks: []Check{
		check(OpDescribe, ResourceTopic, "each topic", errTopic, PerItem).or(cluster(OpDelete)),
		check(OpDelete, ResourceTopic, "each existing topic", errTopic, PerItem).or(cluster(OpDelete))}},
	{Key: 21, Checks: []Check{topicsCheck(OpDelete)}},
	{Key: 22, Checks: []Check{
		txnCheck(OpWrite, Whole).when("a transactional id is given"),
		clusterCheck(OpIdempotentWrite).or(onTopic(OpWrite)).when("no transactional id (WRITE on any topic passes)")}},
	{Key: 23, Checks: []Check{topicsCheck(OpDescribe).or(cluster(OpClusterAction))}},
	{Key: 24, Checks: []Check{
		txnCheck(OpWrite, Whole).when("a producer adds partitions (versions 0-3)"),
		topicsCheck(OpWrite).when("a producer adds partitions (versions 0-3)"),
		clusterCheck(OpClusterAction).when("a broker's batch of transactions (version 4 on)")},
		Also: "a denied or internal topic fails the producer's whole request: its partitions answer TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED (UNKNOWN_TOPIC_OR_PARTITION when they do not exist)"},
	{Key: 25, Checks: []Check{txnCheck(OpWrite, Whole), groupCheck(OpRead)}},
	{Key: 26, Checks: []Check{txnCheck(OpWrite, Whole)}},
	{Key: 27, Checks: []Check{clusterCheck(OpClusterAction).or(cluster(OpAlter))}},
	{Key: 28, Checks: []Check{txnCheck(OpWrite, Whole), groupCheck(OpRead), topicsCheck(OpRead)}},
	{Key: 29, Checks: []Check{clusterCheck(OpDescribe)}, Also: "SECURITY_DISABLED without an authorizer"},
	{Key: 30, Checks: []Check{check(OpAlter, ResourceCluster, ClusterName, errCluster, Whole)}, Also: "SECURITY_DISABLED without an authorizer"},
	{Key: 31, Checks: []Check{check(OpAlter, ResourceCluster, ClusterName, errCluster, Whole)}, Also: "SECURITY_DISABLED without an authorizer"},
	{Key: 32, Checks: []Check{
		topicsCheck(OpDescribeConfigs).when("topic resources"),
		groupsCheck(OpDescribeConfigs).when("group resources"),
		check(OpDescribeConfigs, ResourceCluster, ClusterName, errCluster, PerItem).when("broker, broker logger and client metrics resources")}},
	{Key: 33, Checks: []Check{
		topicsCheck(OpAlterConfigs).when("topic resources"),
		groupsCheck(OpAlterConfigs).when("group resources"),
		check(OpAlterConfigs, ResourceCluster, ClusterName, errCluster, PerItem).when("broker and client metrics resources")}},
	{Key: 35, Checks: []Check{clusterCheck(OpDescribe)}},
	{Key: 36},
	{Key: 37, Checks: []Check{topicsCheck(OpAlter)}},
	{Key: 42, Checks: []Check{groupsCheck(OpDelete)}},
	{Key: 43, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 44, Checks: []Check{
		topicsCheck(OpAlterConfigs).when("topic resources"),
		groupsCheck(OpAlterConfigs).when("group resources"),
		check(OpAlterConfigs, ResourceCluster, ClusterName, errCluster, PerItem).when("broker, broker logger and client metrics resources")}},
	{Key: 45, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 46, Checks: []Check{clusterCheck(OpDescribe)}},
	{Key: 47, Checks: []Check{groupCheck(OpDelete), topicsCheck(OpRead)}},
	{Key: 48, Checks: []Check{clusterCheck(OpDescribeConfigs)}},
	{Key: 49, Checks: []Check{clusterCheck(OpAlterConfigs)}},
	{Key: 50, Checks: []Check{clusterCheck(OpDescribe)}},
	{Key: 51, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 55, Checks: []Check{clusterCheck(OpDescribe)}},
	{Key: 56, Checks: []Check{clusterCheck(OpClusterAction)}},
	{Key: 57, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 60, Also: "authorized operations of the cluster when asked (0 without DESCRIBE on it)"},
	{Key: 61, Checks: []Check{topicsCheck(OpRead)}},
	{Key: 62, Checks: []Check{clusterCheck(OpClusterAction)}},
	{Key: 63, Checks: []Check{clusterCheck(OpClusterAction)}},
	{Key: 64, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 65, Checks: []Check{
		check(OpDescribe, ResourceTransactionalID, "each transactional id", errTxn, PerItem),
		check(OpDescribe, ResourceTopic, "each topic of a described transaction", nil, Hidden)}},
	{Key: 66, Checks: []Check{check(OpDescribe, ResourceTransactionalID, "each transactional id listed", nil, Hidden)}},
	{Key: 67, Checks: []Check{clusterCheck(OpClusterAction)}},
	{Key: 68, Checks: []Check{groupCheck(OpRead), subscribedCheck()},
		Also: "topics a subscription regex matches are filtered with DescribableTopics by the group coordinator"},
	{Key: 69, Checks: []Check{groupsCheck(OpDescribe), assignedCheck()},
		Also: "a group assigned an undescribed topic answers TOPIC_AUTHORIZATION_FAILED without members; authorized operations when asked"},
	{Key: 75, Checks: []Check{
		topicsCheck(OpDescribe).when("topics are named"),
		check(OpDescribe, ResourceTopic, "each topic", nil, Hidden).when("every topic is asked for")},
		Also: "authorized operations of each topic listed"},
	{Key: 76, Checks: []Check{groupCheck(OpRead), subscribedCheck()}},
	{Key: 77, Checks: []Check{groupsCheck(OpDescribe), assignedCheck()},
		Also: "a group assigned an undescribed topic answers TOPIC_AUTHORIZATION_FAILED without members; authorized operations when asked"},
	{Key: 78, Checks: []Check{groupCheck(OpRead), topicsCheck(OpRead)}},
	{Key: 79, Checks: []Check{groupCheck(OpRead), topicsCheck(OpRead)}},
	{Key: 80, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 81, Checks: []Check{clusterCheck(OpAlter)}},
	{Key: 84, Checks: []Check{clusterCheck(OpClusterAction)}},
	{Key: 85, Checks: []Check{clusterCheck(OpClusterAction)}},
	{Key: 88, Checks: []Check{groupCheck(OpRead),
		check(OpDescribe, ResourceTopic, "each topic of the topology", errTopic, Whole).when("a topology is sent (joining)")},
		Also: "the internal topics the broker creates for the group need CREATE on the cluster or on each topic (Checker.Creatable); the others are reported in the MISSING_INTERNAL_TOPICS status"},
	{Key: 89, Checks: []Check{groupsCheck(OpDescribe),
		check(OpDescribe, ResourceTopic, "each topic of a described topology", errTopic, Hidden)},
		Also: "a group whose topology names an undescribed topic answers TOPIC_AUTHORIZATION_FAILED without topology and members; authorized operations when asked"},
	{Key: 90, Checks: []Check{
		groupsCheck(OpDescribe),
		topicsCheck(OpDescribe).when("topics are named"),
		check(OpDescribe, ResourceTopic, "each topic", nil, Hidden).when("all of a group's offsets are asked for")}},
	{Key: 91, Checks: []Check{groupCheck(OpRead), topicsCheck(OpRead)}},
	{Key: 92, Checks: []Check{groupCheck(OpDelete), topicsCheck(OpRead)}},
}

// APIFor returns what Kafka checks for an API key.
func APIFor(key int16) (API, bool) {
	for _, a := range APIs {
		if a.Key == key {
			return a, true
		}
	}
	return API{}, false
}

// Authorize authorizes any request weir serves by its API's function
// (Produce, Fetch, ...). A request of an API without checks is served
// as it is.
func Authorize(c *Checker, env Env, req kmsg.Request) Verdict {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		return verdict(Produce(c, env, r))
	case *kmsg.FetchRequest:
		return verdict(Fetch(c, env, r))
	case *kmsg.ListOffsetsRequest:
		return verdict(ListOffsets(c, env, r))
	case *kmsg.MetadataRequest:
		return verdict(Metadata(c, env, r))
	case *kmsg.OffsetCommitRequest:
		return verdict(OffsetCommit(c, env, r))
	case *kmsg.OffsetFetchRequest:
		return verdict(OffsetFetch(c, env, r))
	case *kmsg.FindCoordinatorRequest:
		return verdict(FindCoordinator(c, env, r))
	case *kmsg.JoinGroupRequest:
		return verdict(JoinGroup(c, env, r))
	case *kmsg.HeartbeatRequest:
		return verdict(Heartbeat(c, env, r))
	case *kmsg.LeaveGroupRequest:
		return verdict(LeaveGroup(c, env, r))
	case *kmsg.SyncGroupRequest:
		return verdict(SyncGroup(c, env, r))
	case *kmsg.DescribeGroupsRequest:
		return verdict(DescribeGroups(c, env, r))
	case *kmsg.ListGroupsRequest:
		return verdict(ListGroups(c, env, r))
	case *kmsg.CreateTopicsRequest:
		return verdict(CreateTopics(c, env, r))
	case *kmsg.DeleteTopicsRequest:
		return verdict(DeleteTopics(c, env, r))
	case *kmsg.DeleteRecordsRequest:
		return verdict(DeleteRecords(c, env, r))
	case *kmsg.InitProducerIDRequest:
		return verdict(InitProducerID(c, env, r))
	case *kmsg.OffsetForLeaderEpochRequest:
		return verdict(OffsetForLeaderEpoch(c, env, r))
	case *kmsg.AddPartitionsToTxnRequest:
		return verdict(AddPartitionsToTxn(c, env, r))
	case *kmsg.AddOffsetsToTxnRequest:
		return verdict(AddOffsetsToTxn(c, env, r))
	case *kmsg.EndTxnRequest:
		return verdict(EndTxn(c, env, r))
	case *kmsg.WriteTxnMarkersRequest:
		return verdict(WriteTxnMarkers(c, env, r))
	case *kmsg.TxnOffsetCommitRequest:
		return verdict(TxnOffsetCommit(c, env, r))
	case *kmsg.DescribeACLsRequest:
		return verdict(DescribeAcls(c, env, r))
	case *kmsg.CreateACLsRequest:
		return verdict(CreateAcls(c, env, r))
	case *kmsg.DeleteACLsRequest:
		return verdict(DeleteAcls(c, env, r))
	case *kmsg.DescribeConfigsRequest:
		return verdict(DescribeConfigs(c, env, r))
	case *kmsg.AlterConfigsRequest:
		return verdict(AlterConfigs(c, env, r))
	case *kmsg.DescribeLogDirsRequest:
		return verdict(DescribeLogDirs(c, env, r))
	case *kmsg.CreatePartitionsRequest:
		return verdict(CreatePartitions(c, env, r))
	case *kmsg.DeleteGroupsRequest:
		return verdict(DeleteGroups(c, env, r))
	case *kmsg.ElectLeadersRequest:
		return verdict(ElectLeaders(c, env, r))
	case *kmsg.IncrementalAlterConfigsRequest:
		return verdict(IncrementalAlterConfigs(c, env, r))
	case *kmsg.AlterPartitionAssignmentsRequest:
		return verdict(AlterPartitionAssignments(c, env, r))
	case *kmsg.ListPartitionReassignmentsRequest:
		return verdict(ListPartitionReassignments(c, env, r))
	case *kmsg.OffsetDeleteRequest:
		return verdict(OffsetDelete(c, env, r))
	case *kmsg.DescribeClientQuotasRequest:
		return verdict(DescribeClientQuotas(c, env, r))
	case *kmsg.AlterClientQuotasRequest:
		return verdict(AlterClientQuotas(c, env, r))
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return verdict(DescribeUserScramCredentials(c, env, r))
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return verdict(AlterUserScramCredentials(c, env, r))
	case *kmsg.DescribeQuorumRequest:
		return verdict(DescribeQuorum(c, env, r))
	case *kmsg.AlterPartitionRequest:
		return verdict(AlterPartition(c, env, r))
	case *kmsg.UpdateFeaturesRequest:
		return verdict(UpdateFeatures(c, env, r))
	case *kmsg.DescribeClusterRequest:
		return verdict(DescribeCluster(c, env, r))
	case *kmsg.DescribeProducersRequest:
		return verdict(DescribeProducers(c, env, r))
	case *kmsg.BrokerRegistrationRequest:
		return verdict(BrokerRegistration(c, env, r))
	case *kmsg.BrokerHeartbeatRequest:
		return verdict(BrokerHeartbeat(c, env, r))
	case *kmsg.UnregisterBrokerRequest:
		return verdict(UnregisterBroker(c, env, r))
	case *kmsg.DescribeTransactionsRequest:
		return verdict(DescribeTransactions(c, env, r))
	case *kmsg.ListTransactionsRequest:
		return verdict(ListTransactions(c, env, r))
	case *kmsg.AllocateProducerIDsRequest:
		return verdict(AllocateProducerIDs(c, env, r))
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return verdict(ConsumerGroupHeartbeat(c, env, r))
	case *kmsg.ConsumerGroupDescribeRequest:
		return verdict(ConsumerGroupDescribe(c, env, r))
	case *kmsg.StreamsGroupHeartbeatRequest:
		return verdict(StreamsGroupHeartbeat(c, env, r))
	case *kmsg.StreamsGroupDescribeRequest:
		return verdict(StreamsGroupDescribe(c, env, r))
	case *kmsg.DescribeTopicPartitionsRequest:
		return verdict(DescribeTopicPartitions(c, env, r))
	case *kmsg.ShareGroupHeartbeatRequest:
		return verdict(ShareGroupHeartbeat(c, env, r))
	case *kmsg.ShareGroupDescribeRequest:
		return verdict(ShareGroupDescribe(c, env, r))
	case *kmsg.ShareFetchRequest:
		return verdict(ShareFetch(c, env, r))
	case *kmsg.ShareAcknowledgeRequest:
		return verdict(ShareAcknowledge(c, env, r))
	case *kmsg.AddRaftVoterRequest:
		return verdict(AddRaftVoter(c, env, r))
	case *kmsg.RemoveRaftVoterRequest:
		return verdict(RemoveRaftVoter(c, env, r))
	case *kmsg.ReadShareGroupStateRequest:
		return verdict(ReadShareGroupState(c, env, r))
	case *kmsg.WriteShareGroupStateRequest:
		return verdict(WriteShareGroupState(c, env, r))
	case *kmsg.DescribeShareGroupOffsetsRequest:
		return verdict(DescribeShareGroupOffsets(c, env, r))
	case *kmsg.AlterShareGroupOffsetsRequest:
		return verdict(AlterShareGroupOffsets(c, env, r))
	case *kmsg.DeleteShareGroupOffsetsRequest:
		return verdict(DeleteShareGroupOffsets(c, env, r))
	}
	return Verdict{Request: req, Finish: identity}
}
