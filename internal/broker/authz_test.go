package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"weir/internal/config"
	"weir/internal/metadata"
	"weir/internal/server"
)

// clientIDPrincipal is a listener security for tests: a connection's
// principal is User:<the client id of its requests>, so each client
// names who it is.
type clientIDPrincipal struct{}

func (clientIDPrincipal) Versions() []server.APIVersionRange { return nil }
func (clientIDPrincipal) Open(_ context.Context, nc net.Conn) (net.Conn, server.Gate, error) {
	return nc, clientIDGate{}, nil
}

type clientIDGate struct{}

func (clientIDGate) Admit(int16) bool { return true }
func (clientIDGate) MaxFrame() int32  { return 0 }
func (clientIDGate) Check(req *server.Request) server.Verdict {
	if req.ClientID == "" {
		return server.Verdict{}
	}
	return server.Verdict{Principal: "User:" + req.ClientID}
}

// startAuthorizedBroker starts a broker with the StandardAuthorizer and
// User:admin as its super user; clients are who their client id says.
func startAuthorizedBroker(t *testing.T, props map[string]string) *testBroker {
	t.Helper()
	kv := map[string]string{
		config.NodeID:              "1",
		config.AuthorizerClassName: "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		config.SuperUsers:          "User:admin",
	}
	for k, v := range props {
		kv[k] = v
	}
	settings, err := config.NewBroker(kv)
	if err != nil {
		t.Fatal(err)
	}
	return startSecureBroker(t, t.TempDir(), func(c *Config) {
		c.Settings = settings
		c.MaxPartitionsPerTopic = 16
	}, clientIDPrincipal{})
}

// brokerState is what a denied request must leave as it was: the
// metadata image, the topic's offsets, the groups and their offsets, the
// transactions.
type brokerState struct {
	img     *metadata.Image
	offsets string
	groups  string
	txns    string
}

func stateOf(t *testing.T, ctx context.Context, tb *testBroker, adm *kadm.Client) brokerState {
	t.Helper()
	starts, err := adm.ListStartOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var offsets []string
	for _, l := range []kadm.ListedOffsets{starts, ends} {
		l.Each(func(o kadm.ListedOffset) {
			offsets = append(offsets, fmt.Sprint(o.Topic, o.Partition, o.Offset, o.Err))
		})
	}
	slices.Sort(offsets)
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	groups := listed.Groups()
	slices.Sort(groups)
	desc := fmt.Sprint(groups)
	for _, g := range groups {
		fetched, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		fetched.Each(func(o kadm.OffsetResponse) { desc += fmt.Sprint(" ", g, o.Topic, o.Partition, o.At, o.Err) })
	}
	described, err := adm.DescribeTransactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var txns []string
	for _, d := range described {
		txns = append(txns, fmt.Sprintf("%s %s %d/%d %v %v", d.TxnID, d.State, d.ProducerID, d.ProducerEpoch, d.Topics.Sorted(), d.Err))
	}
	slices.Sort(txns)
	return brokerState{img: tb.b.img.Load(), offsets: strings.Join(offsets, ","), groups: desc, txns: strings.Join(txns, ",")}
}

func (s brokerState) diff(o brokerState) string {
	switch {
	case !s.img.Equal(o.img):
		return fmt.Sprintf("the metadata image changed (offset %d -> %d)", s.img.Offset(), o.img.Offset())
	case s.offsets != o.offsets:
		return fmt.Sprintf("offsets %s -> %s", s.offsets, o.offsets)
	case s.groups != o.groups:
		return fmt.Sprintf("groups %s -> %s", s.groups, o.groups)
	case s.txns != o.txns:
		return fmt.Sprintf("transactions %s -> %s", s.txns, o.txns)
	}
	return ""
}

var errorCodeField = regexp.MustCompile(`"(\w*ErrorCode)":(-?\d+)`)

// responseCodes lists the non-zero error codes anywhere in a response.
func responseCodes(resp kmsg.Response) []int16 {
	js, _ := json.Marshal(resp)
	var out []int16
	for _, m := range errorCodeField.FindAllStringSubmatch(string(js), -1) {
		var c int16
		fmt.Sscan(m[2], &c)
		if c != 0 {
			out = append(out, c)
		}
	}
	return out
}

// denial is one request of the matrix and what Kafka answers a principal
// without ACLs: every error code of the answer is code, or (code 0) the
// answer does not mention what hidden names. The request goes at the
// highest version both sides know, or at most at its own version when
// that is set (a client's AddPartitionsToTxn, below the brokers'
// batches).
type denial struct {
	name   string
	req    kmsg.Request
	code   int16
	hidden string
}

// TestDenialMatrix sends every API weir serves as a principal without any
// ACL (User:mallory) and checks Kafka's answer (the
// *_AUTHORIZATION_FAILED code, or the topic or group left out), and that
// nothing changed: the metadata image (topics, configs, ACLs, SCRAM
// credentials, quotas), the topic's offsets, the groups and their
// offsets.
func TestDenialMatrix(t *testing.T) {
	tb := startAuthorizedBroker(t, nil)
	ctx := testCtx(t)
	admin := newClient(t, tb.addr, kgo.ClientID("admin"))
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, tb.addr, kgo.ClientID("admin"), kgo.DefaultProduceTopic("t"))
	if err := p.ProduceSync(ctx, kgo.StringRecord("a"), kgo.StringRecord("b"), kgo.StringRecord("c")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var commit kadm.Offsets
	commit.AddOffset("t", 0, 2, -1)
	if resp, err := adm.CommitOffsets(ctx, "g", commit); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	// Something of each security record, for the image to hold.
	if res, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpRead)); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	if res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}}); err != nil || res.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, res.Error())
	}
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "user", Name: kmsg.StringPtr("alice")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}},
	}}); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	tid := md.Topics["t"].ID
	// An open transaction of t's, which every transaction request below
	// would change if it were allowed (u's partition added to it, the
	// group's offsets partition, its end, a marker in t).
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "u"); err != nil {
		t.Fatal(err)
	}
	txp := newClient(t, tb.addr, kgo.ClientID("admin"), kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("t"),
		kgo.TransactionTimeout(5*time.Minute))
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txp.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	described, err := adm.DescribeTransactions(ctx, "tx")
	if err != nil {
		t.Fatal(err)
	}
	open := described["tx"]
	if open.State != "Ongoing" {
		t.Fatalf("transaction tx: %+v, want Ongoing", open)
	}
	pid, epoch := open.ProducerID, open.ProducerEpoch

	const (
		topicDenied   = 29 // TOPIC_AUTHORIZATION_FAILED
		groupDenied   = 30 // GROUP_AUTHORIZATION_FAILED
		clusterDenied = 31 // CLUSTER_AUTHORIZATION_FAILED
		txnDenied     = 53 // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
	)
	str := kmsg.StringPtr
	cases := []denial{
		{"produce", &kmsg.ProduceRequest{Acks: -1, TimeoutMillis: 1000, Topics: []kmsg.ProduceRequestTopic{{Topic: "t", TopicID: tid,
			Partitions: []kmsg.ProduceRequestTopicPartition{{Records: idempotentBatch(-1, -1, -1, "x")}}}}}, topicDenied, ""},
		{"fetch", &kmsg.FetchRequest{ReplicaID: -1, MaxWaitMillis: 10, MaxBytes: 1 << 20, Topics: []kmsg.FetchRequestTopic{{Topic: "t", TopicID: tid,
			Partitions: []kmsg.FetchRequestTopicPartition{{PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1}}}}}, topicDenied, ""},
		{"list offsets", &kmsg.ListOffsetsRequest{ReplicaID: -1, Topics: []kmsg.ListOffsetsRequestTopic{{Topic: "t",
			Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1, CurrentLeaderEpoch: -1}}}}}, topicDenied, ""},
		{"metadata of t", &kmsg.MetadataRequest{Topics: []kmsg.MetadataRequestTopic{{Topic: str("t")}}}, topicDenied, ""},
		{"metadata of all topics", &kmsg.MetadataRequest{}, 0, `"Topic":"t"`},
		{"metadata creating a topic", &kmsg.MetadataRequest{Topics: []kmsg.MetadataRequestTopic{{Topic: str("new")}}, AllowAutoTopicCreation: true}, topicDenied, ""},
		{"offset commit", &kmsg.OffsetCommitRequest{Group: "g", Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", TopicID: tid,
			Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Offset: 3, LeaderEpoch: -1}}}}}, groupDenied, ""},
		{"offset fetch", &kmsg.OffsetFetchRequest{Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberEpoch: -1}}}, groupDenied, ""},
		{"find group coordinator", &kmsg.FindCoordinatorRequest{CoordinatorKeys: []string{"g"}}, groupDenied, ""},
		{"find transaction coordinator", &kmsg.FindCoordinatorRequest{CoordinatorType: 1, CoordinatorKeys: []string{"tx"}}, txnDenied, ""},
		{"join group", &kmsg.JoinGroupRequest{Group: "g", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 1000, ProtocolType: "consumer",
			Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range"}}}, groupDenied, ""},
		{"heartbeat", &kmsg.HeartbeatRequest{Group: "g", MemberID: "m"}, groupDenied, ""},
		{"leave group", &kmsg.LeaveGroupRequest{Group: "g", Members: []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}}, groupDenied, ""},
		{"sync group", &kmsg.SyncGroupRequest{Group: "g", MemberID: "m"}, groupDenied, ""},
		{"describe groups", &kmsg.DescribeGroupsRequest{Groups: []string{"g"}}, groupDenied, ""},
		{"list groups", &kmsg.ListGroupsRequest{}, 0, `"Group":"g"`},
		{"create topics", &kmsg.CreateTopicsRequest{TimeoutMillis: 1000, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "new", NumPartitions: 1, ReplicationFactor: 1}}}, topicDenied, ""},
		{"delete topics", &kmsg.DeleteTopicsRequest{TimeoutMillis: 1000, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: str("t")}}}, topicDenied, ""},
		{"delete topics by id", &kmsg.DeleteTopicsRequest{TimeoutMillis: 1000, Topics: []kmsg.DeleteTopicsRequestTopic{{TopicID: tid}}}, topicDenied, ""},
		{"delete records", &kmsg.DeleteRecordsRequest{TimeoutMillis: 1000, Topics: []kmsg.DeleteRecordsRequestTopic{{Topic: "t",
			Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Offset: 2}}}}}, topicDenied, ""},
		{"init transactional producer id", &kmsg.InitProducerIDRequest{TransactionalID: str("tx"), TransactionTimeoutMillis: 60000, ProducerID: -1, ProducerEpoch: -1}, txnDenied, ""},
		{"init idempotent producer id", &kmsg.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1}, clusterDenied, ""},
		{"offset for leader epoch", &kmsg.OffsetForLeaderEpochRequest{ReplicaID: -1, Topics: []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t",
			Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{CurrentLeaderEpoch: -1}}}}}, topicDenied, ""},
		{"add partitions to txn", &kmsg.AddPartitionsToTxnRequest{Version: 3, TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch,
			Topics: []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "u", Partitions: []int32{0}}}}, txnDenied, ""},
		{"add partitions to txn, a broker's batch", &kmsg.AddPartitionsToTxnRequest{Version: 5, Transactions: []kmsg.AddPartitionsToTxnRequestTransaction{{
			TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "u", Partitions: []int32{0}}}}}}, clusterDenied, ""},
		{"add offsets to txn", &kmsg.AddOffsetsToTxnRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Group: "g"}, txnDenied, ""},
		{"end txn", &kmsg.EndTxnRequest{TransactionalID: "tx", ProducerID: pid, ProducerEpoch: epoch, Commit: true}, txnDenied, ""},
		{"write txn markers", &kmsg.WriteTxnMarkersRequest{Markers: []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: pid, ProducerEpoch: epoch,
			Committed: true, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}}}}, clusterDenied, ""},
		{"txn offset commit", &kmsg.TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", ProducerID: pid, ProducerEpoch: epoch, Generation: -1,
			Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Offset: 3, LeaderEpoch: -1}}}}}, txnDenied, ""},
		{"describe acls", &kmsg.DescribeACLsRequest{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}, clusterDenied, ""},
		{"create acls", &kmsg.CreateACLsRequest{Creations: []kmsg.CreateACLsRequestCreation{{ResourceType: 2, ResourceName: "t", ResourcePatternType: 3,
			Principal: "User:mallory", Host: "*", Operation: 2, PermissionType: 3}}}, clusterDenied, ""},
		{"delete acls", &kmsg.DeleteACLsRequest{Filters: []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}}, clusterDenied, ""},
		{"describe topic configs", &kmsg.DescribeConfigsRequest{Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}}, topicDenied, ""},
		{"describe broker configs", &kmsg.DescribeConfigsRequest{Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}}, clusterDenied, ""},
		{"alter configs", &kmsg.AlterConfigsRequest{Resources: []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
			Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: str("1000")}}}}}, topicDenied, ""},
		{"describe log dirs", &kmsg.DescribeLogDirsRequest{}, clusterDenied, ""},
		{"create partitions", &kmsg.CreatePartitionsRequest{TimeoutMillis: 1000, Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 3}}}, topicDenied, ""},
		{"delete groups", &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}, groupDenied, ""},
		{"elect leaders", &kmsg.ElectLeadersRequest{TimeoutMillis: 1000, Topics: []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}}, clusterDenied, ""},
		{"incremental alter configs", &kmsg.IncrementalAlterConfigsRequest{Resources: []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: str("1000")}}}}}, topicDenied, ""},
		{"alter partition reassignments", &kmsg.AlterPartitionAssignmentsRequest{TimeoutMillis: 1000, Topics: []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t",
			Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Replicas: []int32{1}}}}}}, clusterDenied, ""},
		{"list partition reassignments", &kmsg.ListPartitionReassignmentsRequest{TimeoutMillis: 1000}, clusterDenied, ""},
		{"offset delete", &kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{}}}}}, groupDenied, ""},
		{"describe client quotas", &kmsg.DescribeClientQuotasRequest{}, clusterDenied, ""},
		{"alter client quotas", &kmsg.AlterClientQuotasRequest{Entries: []kmsg.AlterClientQuotasRequestEntry{{
			Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: str("mallory")}},
			Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1e9}}}}}, clusterDenied, ""},
		{"describe user scram credentials", &kmsg.DescribeUserSCRAMCredentialsRequest{}, clusterDenied, ""},
		{"alter user scram credentials", &kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "alice", Mechanism: 1}}}, clusterDenied, ""},
		{"describe quorum", &kmsg.DescribeQuorumRequest{Topics: []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata",
			Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{}}}}}, clusterDenied, ""},
		{"update features", &kmsg.UpdateFeaturesRequest{TimeoutMillis: 1000, FeatureUpdates: []kmsg.UpdateFeaturesRequestFeatureUpdate{{
			Feature: "group.version", MaxVersionLevel: 0, UpgradeType: 2}}}, clusterDenied, ""},
		{"add raft voter", &kmsg.AddRaftVoterRequest{VoterID: 4, TimeoutMillis: 1000, Listeners: []kmsg.AddRaftVoterRequestListener{{
			Name: "CONTROLLER", Host: "127.0.0.1", Port: 1}}}, clusterDenied, ""},
		{"remove raft voter", &kmsg.RemoveRaftVoterRequest{VoterID: 1}, clusterDenied, ""},
		{"alter partition", &kmsg.AlterPartitionRequest{BrokerID: 1, BrokerEpoch: -1, Topics: []kmsg.AlterPartitionRequestTopic{{TopicID: tid,
			Partitions: []kmsg.AlterPartitionRequestTopicPartition{{NewISR: []int32{1}}}}}}, clusterDenied, ""},
		{"describe producers", &kmsg.DescribeProducersRequest{Topics: []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}}}, topicDenied, ""},
		{"broker registration", &kmsg.BrokerRegistrationRequest{BrokerID: 7}, clusterDenied, ""},
		{"broker heartbeat", &kmsg.BrokerHeartbeatRequest{BrokerID: 1, BrokerEpoch: -1}, clusterDenied, ""},
		{"unregister broker", &kmsg.UnregisterBrokerRequest{BrokerID: 1}, clusterDenied, ""},
		{"describe transactions", &kmsg.DescribeTransactionsRequest{TransactionalIDs: []string{"tx"}}, txnDenied, ""},
		{"list transactions", &kmsg.ListTransactionsRequest{DurationFilterMillis: -1}, 0, `"TransactionalID":"tx"`},
		{"allocate producer ids", &kmsg.AllocateProducerIDsRequest{BrokerID: 1, BrokerEpoch: -1}, clusterDenied, ""},
		{"consumer group heartbeat", &kmsg.ConsumerGroupHeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: 0, RebalanceTimeoutMillis: 1000,
			SubscribedTopicNames: []string{"t"}}, groupDenied, ""},
		{"consumer group describe", &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}, groupDenied, ""},
		{"streams group heartbeat", &kmsg.StreamsGroupHeartbeatRequest{Group: "g", MemberID: "m", RebalanceTimeoutMillis: 1000,
			Topology: &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
				SubtopologyID: "0", SourceTopics: []string{"t"}}}},
			ActiveTasks: []kmsg.TaskIDs{}, StandbyTasks: []kmsg.TaskIDs{}, WarmupTasks: []kmsg.TaskIDs{}}, groupDenied, ""},
		{"streams group describe", &kmsg.StreamsGroupDescribeRequest{Groups: []string{"g"}}, groupDenied, ""},
		{"describe topic partitions", &kmsg.DescribeTopicPartitionsRequest{Topics: []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}, ResponsePartitionLimit: 100}, topicDenied, ""},
		{"describe all topic partitions", &kmsg.DescribeTopicPartitionsRequest{ResponsePartitionLimit: 100}, 0, `"Topic":"t"`},
		{"share group heartbeat", &kmsg.ShareGroupHeartbeatRequest{GroupID: "sg", MemberID: "m", SubscribedTopicNames: []string{"t"}}, groupDenied, ""},
		{"share group describe", &kmsg.ShareGroupDescribeRequest{GroupIDs: []string{"sg"}}, groupDenied, ""},
		{"share fetch", &kmsg.ShareFetchRequest{GroupID: str("sg"), MemberID: str("m"), MaxWaitMillis: 10, MaxBytes: 1 << 20,
			Topics: []kmsg.ShareFetchRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{{}}}}}, groupDenied, ""},
		{"share acknowledge", &kmsg.ShareAcknowledgeRequest{GroupID: str("sg"), MemberID: str("m"),
			Topics: []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tid, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{}}}}}, groupDenied, ""},
		{"read share group state", &kmsg.ReadShareGroupStateRequest{GroupID: "sg", Topics: []kmsg.ReadShareGroupStateRequestTopic{{TopicID: tid,
			Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{}}}}}, clusterDenied, ""},
		{"write share group state", &kmsg.WriteShareGroupStateRequest{GroupID: "sg", Topics: []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tid,
			Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{StartOffset: 1}}}}}, clusterDenied, ""},
		{"describe share group offsets", &kmsg.DescribeShareGroupOffsetsRequest{Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}}, groupDenied, ""},
		{"alter share group offsets", &kmsg.AlterShareGroupOffsetsRequest{GroupID: "sg", Topics: []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t",
			Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{StartOffset: 1}}}}}, groupDenied, ""},
		{"delete share group offsets", &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "sg", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}}, groupDenied, ""},
	}

	// Every served API is in the matrix, but ApiVersions and
	// DescribeCluster, which Kafka does not authorize.
	covered := map[int16]bool{18: true, 60: true}
	for _, c := range cases {
		covered[c.req.Key()] = true
	}
	for key := range handlers {
		if !covered[key] {
			t.Errorf("%s (%d) is not in the denial matrix", kmsg.NameForKey(key), key)
		}
	}

	mallory := newClient(t, tb.addr, kgo.ClientID("mallory"))
	pinned := func(key, max int16) *kgo.Client {
		v := kversion.Stable()
		v.SetMaxKeyVersion(key, max)
		return newClient(t, tb.addr, kgo.ClientID("mallory"), kgo.MaxVersions(v))
	}
	before := stateOf(t, ctx, tb, adm)
	for _, c := range cases {
		cl := mallory
		if v := c.req.GetVersion(); v > 0 {
			cl = pinned(c.req.Key(), v)
		}
		resp, err := cl.Broker(1).Request(ctx, c.req)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		js, _ := json.Marshal(resp)
		if c.code == 0 {
			if strings.Contains(string(js), c.hidden) {
				t.Errorf("%s v%d: the answer shows %s: %s", c.name, c.req.GetVersion(), c.hidden, js)
			}
		} else if codes := responseCodes(resp); len(codes) == 0 || slices.ContainsFunc(codes, func(x int16) bool { return x != c.code }) {
			t.Errorf("%s v%d: codes %v, want only %s: %s", c.name, c.req.GetVersion(), codes, kerr.ErrorForCode(c.code), js)
		}
		after := stateOf(t, ctx, tb, adm)
		if d := before.diff(after); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
		before = after
	}

	// Authorized operations: alice may READ t (so DESCRIBE it), and
	// nothing on the cluster.
	alice := newClient(t, tb.addr, kgo.ClientID("alice"))
	resp, err := alice.Broker(1).Request(ctx, &kmsg.MetadataRequest{Topics: []kmsg.MetadataRequestTopic{{Topic: str("t")}}, IncludeTopicAuthorizedOperations: true})
	if err != nil {
		t.Fatal(err)
	}
	const read, describe = 1 << 3, 1 << 8
	if mt := resp.(*kmsg.MetadataResponse).Topics; len(mt) != 1 || mt[0].ErrorCode != 0 || mt[0].AuthorizedOperations != read|describe {
		t.Fatalf("alice's metadata of t: %+v, want authorized operations READ and DESCRIBE (%d)", mt, read|describe)
	}
	dcr := kmsg.NewPtrDescribeClusterRequest()
	dcr.IncludeClusterAuthorizedOperations = true
	resp, err = alice.Broker(1).Request(ctx, dcr)
	if err != nil {
		t.Fatal(err)
	}
	if dc := resp.(*kmsg.DescribeClusterResponse); dc.ErrorCode != 0 || dc.ClusterAuthorizedOperations != 0 {
		t.Fatalf("alice's cluster operations: %+v, want none", dc)
	}
}

// setQuota sets one quota of a client id.
func setQuota(t *testing.T, ctx context.Context, adm *kadm.Client, clientID, key string, value float64) {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsg.StringPtr(clientID)}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: key, Value: value}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("AlterClientQuotas: %v %+v", err, res)
	}
}

// TestProduceQuotaThrottles: a produce over its client id's
// producer_byte_rate is appended, answered with Kafka's throttle time
// (the excess over the quota, over the measured window: 120 kB against
// 10 kB/s over ten one-second windows is 2 s) and mutes the connection;
// another client id is not throttled.
func TestProduceQuotaThrottles(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tb.addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	setQuota(t, ctx, adm, "slow", "producer_byte_rate", 10000)
	value := strings.Repeat("x", 120000)
	for _, c := range []struct {
		clientID string
		min, max int32
	}{{"fast", 0, 0}, {"slow", 1800, 2200}} {
		cl := newClient(t, tb.addr, kgo.ClientID(c.clientID))
		before := tb.srv.Stats().ThrottledReplies
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		req.Topics = []kmsg.ProduceRequestTopic{{Topic: "q", TopicID: tb.b.lookupTopic("q").id,
			Partitions: []kmsg.ProduceRequestTopicPartition{{Records: idempotentBatch(-1, -1, -1, value)}}}}
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		pr := resp.(*kmsg.ProduceResponse)
		if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%s: %v", c.clientID, kerr.ErrorForCode(code))
		}
		if pr.ThrottleMillis < c.min || pr.ThrottleMillis > c.max {
			t.Fatalf("%s: throttled %d ms, want %d..%d", c.clientID, pr.ThrottleMillis, c.min, c.max)
		}
		if muted := tb.srv.Stats().ThrottledReplies - before; (muted > 0) != (c.max > 0) {
			t.Fatalf("%s: %d replies muted their connection", c.clientID, muted)
		}
	}
}

// TestFetchQuotaCapsAndThrottles: a consumer's fetch returns at most
// what its consumer_byte_rate allows over the quota window (10 kB/s over
// ten windows: 100 kB), and the next fetch, over the quota, is answered
// without records with a throttle time.
func TestFetchQuotaCapsAndThrottles(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tb.addr))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	p := newClient(t, tb.addr, kgo.DefaultProduceTopic("q"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for range 40 {
		if err := p.ProduceSync(ctx, kgo.StringRecord(strings.Repeat("y", 4000))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl := newClient(t, tb.addr, kgo.ClientID("reader"))
	fetch := func(offset int64) (*kmsg.FetchResponse, int) {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes = -1, 10, 1<<20
		req.Topics = []kmsg.FetchRequestTopic{{Topic: "q", TopicID: tb.b.lookupTopic("q").id,
			Partitions: []kmsg.FetchRequestTopicPartition{{FetchOffset: offset, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1}}}}
		resp, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		fr := resp.(*kmsg.FetchResponse)
		n := 0
		for _, tp := range fr.Topics {
			for _, pp := range tp.Partitions {
				n += len(pp.RecordBatches)
			}
		}
		return fr, n
	}
	setQuota(t, ctx, adm, "reader", "consumer_byte_rate", 10000)
	first, n := fetch(0)
	if n < 90000 || n > 100000 || first.ThrottleMillis != 0 {
		t.Fatalf("first fetch: %d bytes, throttled %d ms; want 90000..100000 bytes, not throttled", n, first.ThrottleMillis)
	}
	second, n := fetch(10)
	if n != 0 || second.ThrottleMillis <= 0 {
		t.Fatalf("second fetch: %d bytes, throttled %d ms; want none, throttled", n, second.ThrottleMillis)
	}
}

// TestTransactionsAuthorized: with the authorizer on, a transactional
// producer allowed WRITE on its transactional id and topic commits and
// aborts on a single node, whose transaction coordinator sends its
// markers and verifications to this node itself; read_committed sees
// exactly the committed records. Without the ACL on the transactional
// id the producer gets no producer id.
func TestTransactionsAuthorized(t *testing.T) {
	tb := startAuthorizedBroker(t, nil)
	ctx := testCtx(t)
	admin := newClient(t, tb.addr, kgo.ClientID("admin"))
	adm := kadm.NewClient(admin)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "tt"); err != nil {
		t.Fatal(err)
	}
	acls := kadm.NewACLs().Allow("User:alice").Topics("tt").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	acls = kadm.NewACLs().Allow("User:alice").TransactionalIDs("app").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}

	p := newClient(t, tb.addr, kgo.ClientID("alice"), kgo.TransactionalID("app"), kgo.DefaultProduceTopic("tt"))
	for _, c := range []struct {
		value  string
		commit bool
	}{{"c0", true}, {"a0", false}, {"c1", true}} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := p.ProduceSync(ctx, kgo.StringRecord(c.value)).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", c.value, err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(c.commit)); err != nil {
			t.Fatalf("end %s: %v", c.value, err)
		}
	}
	eventually(t, 10*time.Second, func() error {
		got := fmt.Sprint(consumeAll(t, ctx, tb.addr, "tt", kgo.ReadCommitted(), kgo.ClientID("admin")))
		if want := "[c0 c1]"; got != want {
			return fmt.Errorf("read_committed read %s, want %s", got, want)
		}
		return nil
	})

	// carol may write the topic but not as transactional id app.
	acls = kadm.NewACLs().Allow("User:carol").Topics("tt").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	carol := newClient(t, tb.addr, kgo.ClientID("carol"), kgo.TransactionalID("app"), kgo.DefaultProduceTopic("tt"))
	// kgo asks for its producer id when it starts, and reports the error
	// without wrapping it, from the transaction or the produce.
	err := carol.BeginTransaction()
	if err == nil {
		err = carol.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr()
	}
	if err == nil || !strings.Contains(err.Error(), kerr.TransactionalIDAuthorizationFailed.Message) {
		t.Fatalf("carol's transaction: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}

// TestTransactionsAuthorizedAcrossBrokers: in a two-node cluster with the
// authorizer on, a transaction over a partition on each node commits:
// the coordinator's markers and the leaders' verifications go between
// the brokers as their inter-broker principal (User:weir-replica-N,
// their client id), which needs CLUSTER_ACTION, granted here by ACL as
// it would be to a SASL user; the one to its own node goes without a
// connection.
func TestTransactionsAuthorizedAcrossBrokers(t *testing.T) {
	tc := startSecureCluster(t, 2, clientIDPrincipal{}, func(c *Config) {
		settings, err := config.NewBroker(map[string]string{
			config.NodeID:              itoa(c.NodeID),
			config.AuthorizerClassName: "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			// The controller clients: brokers register before any ACL
			// can be written.
			config.SuperUsers: "User:admin;User:weir-broker-1;User:weir-broker-2",
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Settings = settings
	})
	ctx := testCtx(t)
	addrs := []string{tc.brokers[0].addr, tc.brokers[1].addr}
	admin := newClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.ClientID("admin"))
	adm := kadm.NewClient(admin)
	for _, acls := range []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:weir-replica-1", "User:weir-replica-2").Clusters().Operations(kadm.OpClusterAction),
		kadm.NewACLs().Allow("User:alice").Topics("both").Operations(kadm.OpWrite),
		kadm.NewACLs().Allow("User:alice").TransactionalIDs("app").Operations(kadm.OpWrite),
	} {
		if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
			t.Fatalf("CreateACLs: %v %+v", err, res)
		}
	}
	tc.createAssigned(t, ctx, admin, "both", []int32{1}, []int32{2})
	p := newClient(t, addrs[0], kgo.SeedBrokers(addrs...), kgo.ClientID("alice"), kgo.TransactionalID("app"),
		kgo.DefaultProduceTopic("both"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, c := range []struct {
		value  string
		commit bool
	}{{"c", true}, {"a", false}} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range int32(2) {
			if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(c.value, i)), Partition: i}).FirstErr(); err != nil {
				t.Fatalf("produce %s%d: %v", c.value, i, err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(c.commit)); err != nil {
			t.Fatalf("end %s: %v", c.value, err)
		}
	}
	eventually(t, 15*time.Second, func() error {
		read := consumeAll(t, ctx, addrs[0], "both", kgo.ReadCommitted(), kgo.SeedBrokers(addrs...), kgo.ClientID("admin"))
		slices.Sort(read)
		if got, want := fmt.Sprint(read), "[c0 c1]"; got != want {
			return fmt.Errorf("read_committed read %s, want %s", got, want)
		}
		return nil
	})
}
