package authz

import (
	"bufio"
	"encoding/binary"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	tidT = [16]byte{0x7e, 1}
	tidU = [16]byte{0x7e, 2}
)

// fakeTopics holds topics t and u, of 3 partitions each.
type fakeTopics struct{}

func (fakeTopics) TopicName(id [16]byte) (string, bool) {
	switch id {
	case tidT:
		return "t", true
	case tidU:
		return "u", true
	}
	return "", false
}

func (fakeTopics) TopicID(name string) ([16]byte, bool) {
	switch name {
	case "t":
		return tidT, true
	case "u":
		return tidU, true
	}
	return [16]byte{}, false
}

// Partitions: t and u have 3 partitions.
func (f fakeTopics) Partitions(name string) (int32, bool) {
	if _, ok := f.TopicID(name); !ok {
		return 0, false
	}
	return 3, true
}

var testEnv = Env{Topics: fakeTopics{}, AutoCreateTopics: true}

// errorCodes collects every error code of a message: fields named
// ErrorCode, AcknowledgeErrorCode and ConfigErrorCode, at any depth.
func errorCodes(v any) []int16 {
	var out []int16
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() != reflect.Uint8 {
				for i := range v.Len() {
					walk(v.Index(i))
				}
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				switch {
				case f.Type.Kind() == reflect.Int16 && (f.Name == "ErrorCode" || f.Name == "AcknowledgeErrorCode" || f.Name == "ConfigErrorCode"):
					if c := int16(v.Field(i).Int()); c != 0 {
						out = append(out, c)
					}
				default:
					walk(v.Field(i))
				}
			}
		}
	}
	walk(reflect.ValueOf(v))
	return out
}

// sample is a request that makes one check of its API, the items the
// check is about in it (what a denial takes out), and for hidden items a
// response the handler would give and how many of the items it shows.
type sample struct {
	req   kmsg.Request
	items func(kmsg.Request) int
	resp  func() kmsg.Response
	shown func(kmsg.Response) int
}

func one[T any](s []T) int { return len(s) }

func transactionalBatch() []byte {
	b := make([]byte, 61)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint16(b[21:], 0x10)
	return b
}

func strs(s ...string) []string { return s }

// samples has a sample per check of every API, in the order of its
// checks.
func samples() map[int16][]sample {
	name := "t"
	produce := func(txn bool) kmsg.Request {
		r := kmsg.NewPtrProduceRequest()
		r.Version = 13
		t := kmsg.NewProduceRequestTopic()
		t.TopicID = tidT
		p := kmsg.NewProduceRequestTopicPartition()
		if txn {
			p.Records = transactionalBatch()
			id := "tx"
			r.TransactionID = &id
		}
		t.Partitions = append(t.Partitions, p)
		r.Topics = append(r.Topics, t)
		return r
	}
	produceItems := func(r kmsg.Request) int { return one(r.(*kmsg.ProduceRequest).Topics) }
	fetch := func(follower bool) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.Version = 17
		if follower {
			r.ReplicaState.ID = 2
		}
		t := kmsg.NewFetchRequestTopic()
		t.TopicID = tidT
		t.Partitions = append(t.Partitions, kmsg.NewFetchRequestTopicPartition())
		r.Topics = append(r.Topics, t)
		return r
	}
	fetchItems := func(r kmsg.Request) int { return one(r.(*kmsg.FetchRequest).Topics) }
	metadata := func(topic string, auto bool) kmsg.Request {
		r := kmsg.NewPtrMetadataRequest()
		r.Version = 12
		r.AllowAutoTopicCreation = auto
		if topic != "" {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = &topic
			r.Topics = append(r.Topics, mt)
		} else {
			r.Topics = nil
		}
		return r
	}
	metadataItems := func(r kmsg.Request) int { return one(r.(*kmsg.MetadataRequest).Topics) }
	offsetFetch := func(topics bool) kmsg.Request {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.Version = 9
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		if topics {
			g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
		}
		r.Groups = append(r.Groups, g)
		return r
	}
	findCoordinator := func(typ int8) kmsg.Request {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.Version, r.CoordinatorType, r.CoordinatorKeys = 6, typ, strs("k")
		return r
	}
	fcItems := func(r kmsg.Request) int { return one(r.(*kmsg.FindCoordinatorRequest).CoordinatorKeys) }
	configs := func(t kmsg.ConfigResourceType, key int16) kmsg.Request {
		switch key {
		case 32:
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: t, ResourceName: "t"}}
			return r
		case 33:
			r := kmsg.NewPtrAlterConfigsRequest()
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: t, ResourceName: "t"}}
			return r
		}
		r := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: t, ResourceName: "t"}}
		return r
	}
	configItems := func(r kmsg.Request) int {
		switch r := r.(type) {
		case *kmsg.DescribeConfigsRequest:
			return len(r.Resources)
		case *kmsg.AlterConfigsRequest:
			return len(r.Resources)
		case *kmsg.IncrementalAlterConfigsRequest:
			return len(r.Resources)
		}
		return -1
	}
	configSamples := func(key int16) []sample {
		return []sample{
			{req: configs(kmsg.ConfigResourceTypeTopic, key), items: configItems},
			{req: configs(kmsg.ConfigResourceTypeGroupConfig, key), items: configItems},
			{req: configs(kmsg.ConfigResourceTypeBroker, key), items: configItems},
		}
	}
	describeShare := func(topics bool) kmsg.Request {
		r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = "g"
		if topics {
			g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}
		}
		r.Groups = append(r.Groups, g)
		return r
	}
	addPartitions := func(version int16) kmsg.Request {
		r := kmsg.NewPtrAddPartitionsToTxnRequest()
		r.Version = version
		if version < 4 {
			r.TransactionalID = "tx"
			r.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{0}}}
			return r
		}
		r.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{{TransactionalID: "tx", VerifyOnly: true,
			Topics: []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "t", Partitions: []int32{0}}}}}
		return r
	}
	txnOffsetCommit := func() kmsg.Request {
		return &kmsg.TxnOffsetCommitRequest{Version: 5, TransactionalID: "tx", Group: "g",
			Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Offset: 1}}}}}
	}
	return map[int16][]sample{
		0: {{req: produce(true)}, {req: produce(false), items: produceItems}},
		1: {{req: fetch(true), items: fetchItems}, {req: fetch(false), items: fetchItems}},
		2: {{req: &kmsg.ListOffsetsRequest{Version: 9, Topics: []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{}}}}},
			items: func(r kmsg.Request) int { return one(r.(*kmsg.ListOffsetsRequest).Topics) }}},
		3: {
			{req: metadata("t", false), items: metadataItems},
			{req: metadata("", false), resp: func() kmsg.Response {
				r := kmsg.NewPtrMetadataResponse()
				r.Topics = []kmsg.MetadataResponseTopic{{Topic: &name, TopicID: tidT}}
				return r
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.MetadataResponse).Topics) }},
			{req: metadata("new", true), items: metadataItems},
		},
		8: {
			{req: &kmsg.OffsetCommitRequest{Version: 9, Group: "g", Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{}}}}}},
			{req: &kmsg.OffsetCommitRequest{Version: 10, Group: "g", Topics: []kmsg.OffsetCommitRequestTopic{{TopicID: tidT, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{}}}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.OffsetCommitRequest).Topics) }},
		},
		9: {
			{req: offsetFetch(true), items: func(r kmsg.Request) int { return one(r.(*kmsg.OffsetFetchRequest).Groups) }},
			{req: offsetFetch(true), items: func(r kmsg.Request) int { return one(r.(*kmsg.OffsetFetchRequest).Groups[0].Topics) }},
			{req: offsetFetch(false), resp: func() kmsg.Response {
				r := kmsg.NewPtrOffsetFetchResponse()
				r.Groups = []kmsg.OffsetFetchResponseGroup{{Group: "g", Topics: []kmsg.OffsetFetchResponseGroupTopic{{Topic: "t"}}}}
				return r
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.OffsetFetchResponse).Groups[0].Topics) }},
		},
		10: {{req: findCoordinator(0), items: fcItems}, {req: findCoordinator(1), items: fcItems}, {req: findCoordinator(2)}},
		11: {{req: &kmsg.JoinGroupRequest{Version: 9, Group: "g"}}},
		12: {{req: &kmsg.HeartbeatRequest{Version: 4, Group: "g"}}},
		13: {{req: &kmsg.LeaveGroupRequest{Version: 5, Group: "g"}}},
		14: {{req: &kmsg.SyncGroupRequest{Version: 5, Group: "g"}}},
		15: {{req: &kmsg.DescribeGroupsRequest{Version: 5, Groups: strs("g")}, items: func(r kmsg.Request) int { return one(r.(*kmsg.DescribeGroupsRequest).Groups) }}},
		16: {{req: &kmsg.ListGroupsRequest{Version: 5}, resp: func() kmsg.Response {
			return &kmsg.ListGroupsResponse{Groups: []kmsg.ListGroupsResponseGroup{{Group: "g"}}}
		}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.ListGroupsResponse).Groups) }}},
		19: {
			{req: &kmsg.CreateTopicsRequest{Version: 7, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "new"}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.CreateTopicsRequest).Topics) }},
			{req: &kmsg.CreateTopicsRequest{Version: 7, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "new"}}}, resp: func() kmsg.Response {
				return &kmsg.CreateTopicsResponse{Topics: []kmsg.CreateTopicsResponseTopic{{Topic: "new", NumPartitions: 3, Configs: []kmsg.CreateTopicsResponseTopicConfig{{Name: "c"}}}}}
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.CreateTopicsResponse).Topics[0].Configs) }},
		},
		20: {
			{req: &kmsg.DeleteTopicsRequest{Version: 6, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: &name}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.DeleteTopicsRequest).Topics) }},
			{req: &kmsg.DeleteTopicsRequest{Version: 6, Topics: []kmsg.DeleteTopicsRequestTopic{{TopicID: tidT}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.DeleteTopicsRequest).Topics) }},
		},
		21: {{req: &kmsg.DeleteRecordsRequest{Version: 2, Topics: []kmsg.DeleteRecordsRequestTopic{{Topic: "t", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{}}}}},
			items: func(r kmsg.Request) int { return one(r.(*kmsg.DeleteRecordsRequest).Topics) }}},
		22: {{req: &kmsg.InitProducerIDRequest{Version: 5, TransactionalID: &name}}, {req: &kmsg.InitProducerIDRequest{Version: 5}}},
		23: {{req: &kmsg.OffsetForLeaderEpochRequest{Version: 4, ReplicaID: -1, Topics: []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{}}}}},
			items: func(r kmsg.Request) int { return one(r.(*kmsg.OffsetForLeaderEpochRequest).Topics) }}},
		24: {
			{req: addPartitions(3)},
			{req: addPartitions(3), items: func(r kmsg.Request) int { return one(r.(*kmsg.AddPartitionsToTxnRequest).Topics) }},
			{req: addPartitions(5)},
		},
		25: {
			{req: &kmsg.AddOffsetsToTxnRequest{Version: 4, TransactionalID: "tx", Group: "g"}},
			{req: &kmsg.AddOffsetsToTxnRequest{Version: 4, TransactionalID: "tx", Group: "g"}},
		},
		26: {{req: &kmsg.EndTxnRequest{Version: 5, TransactionalID: "tx", Commit: true}}},
		27: {{req: &kmsg.WriteTxnMarkersRequest{Version: 2, Markers: []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1,
			Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}}}}}},
		28: {
			{req: txnOffsetCommit()},
			{req: txnOffsetCommit()},
			{req: txnOffsetCommit(), items: func(r kmsg.Request) int { return one(r.(*kmsg.TxnOffsetCommitRequest).Topics) }},
		},
		29: {{req: &kmsg.DescribeACLsRequest{Version: 3, ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}},
		30: {{req: &kmsg.CreateACLsRequest{Version: 3, Creations: []kmsg.CreateACLsRequestCreation{{ResourceType: 2, ResourceName: "t", ResourcePatternType: 3, Principal: "User:x", Host: "*", Operation: 3, PermissionType: 3}}}}},
		31: {{req: &kmsg.DeleteACLsRequest{Version: 3, Filters: []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}}}},
		32: configSamples(32),
		33: configSamples(33),
		35: {{req: &kmsg.DescribeLogDirsRequest{Version: 4}}},
		37: {{req: &kmsg.CreatePartitionsRequest{Version: 3, Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 3}}},
			items: func(r kmsg.Request) int { return one(r.(*kmsg.CreatePartitionsRequest).Topics) }}},
		42: {{req: &kmsg.DeleteGroupsRequest{Version: 2, Groups: strs("g")}, items: func(r kmsg.Request) int { return one(r.(*kmsg.DeleteGroupsRequest).Groups) }}},
		43: {{req: &kmsg.ElectLeadersRequest{Version: 2, Topics: []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}}}},
		44: configSamples(44),
		45: {{req: &kmsg.AlterPartitionAssignmentsRequest{Version: 0, Topics: []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{}}}}}}},
		46: {{req: &kmsg.ListPartitionReassignmentsRequest{}}},
		47: {
			{req: &kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{}}}}}},
			{req: &kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{}}}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.OffsetDeleteRequest).Topics) }},
		},
		48: {{req: &kmsg.DescribeClientQuotasRequest{Version: 1}}},
		49: {{req: &kmsg.AlterClientQuotasRequest{Version: 1, Entries: []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: &name}}}}}}},
		50: {{req: &kmsg.DescribeUserSCRAMCredentialsRequest{}}},
		51: {{req: &kmsg.AlterUserSCRAMCredentialsRequest{Deletions: []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "u", Mechanism: 1}}}}},
		55: {{req: &kmsg.DescribeQuorumRequest{Version: 2}}},
		56: {{req: &kmsg.AlterPartitionRequest{Version: 3}}},
		57: {{req: &kmsg.UpdateFeaturesRequest{Version: 1}}},
		61: {{req: &kmsg.DescribeProducersRequest{Topics: []kmsg.DescribeProducersRequestTopic{{Topic: "t", Partitions: []int32{0}}}},
			items: func(r kmsg.Request) int { return one(r.(*kmsg.DescribeProducersRequest).Topics) }}},
		62: {{req: &kmsg.BrokerRegistrationRequest{Version: 4}}},
		63: {{req: &kmsg.BrokerHeartbeatRequest{Version: 1}}},
		64: {{req: &kmsg.UnregisterBrokerRequest{}}},
		65: {
			{req: &kmsg.DescribeTransactionsRequest{TransactionalIDs: strs("tx")},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.DescribeTransactionsRequest).TransactionalIDs) }},
			{req: &kmsg.DescribeTransactionsRequest{TransactionalIDs: strs("tx")}, resp: func() kmsg.Response {
				return &kmsg.DescribeTransactionsResponse{TransactionStates: []kmsg.DescribeTransactionsResponseTransactionState{{TransactionalID: "tx",
					State: "Ongoing", Topics: []kmsg.DescribeTransactionsResponseTransactionStateTopic{{Topic: "t", Partitions: []int32{0}}}}}}
			}, shown: func(r kmsg.Response) int {
				return one(r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].Topics)
			}},
		},
		66: {{req: &kmsg.ListTransactionsRequest{Version: 2}, resp: func() kmsg.Response {
			return &kmsg.ListTransactionsResponse{TransactionStates: []kmsg.ListTransactionsResponseTransactionState{{TransactionalID: "tx", TransactionState: "Ongoing"}}}
		}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.ListTransactionsResponse).TransactionStates) }}},
		67: {{req: &kmsg.AllocateProducerIDsRequest{}}},
		68: {{req: &kmsg.ConsumerGroupHeartbeatRequest{Version: 1, Group: "g"}}, {req: &kmsg.ConsumerGroupHeartbeatRequest{Version: 1, Group: "g", SubscribedTopicNames: strs("t")}}},
		69: {
			{req: &kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: strs("g")}, items: func(r kmsg.Request) int { return one(r.(*kmsg.ConsumerGroupDescribeRequest).Groups) }},
			{req: &kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: strs("g")}, resp: func() kmsg.Response {
				g := kmsg.NewConsumerGroupDescribeResponseGroup()
				g.Group = "g"
				m := kmsg.NewConsumerGroupDescribeResponseGroupMember()
				m.Assignment.TopicPartitions = []kmsg.AssignmentTopicPartition{{Topic: "t", TopicID: tidT}}
				g.Members = append(g.Members, m)
				return &kmsg.ConsumerGroupDescribeResponse{Groups: []kmsg.ConsumerGroupDescribeResponseGroup{g}}
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].Members) }},
		},
		88: {
			{req: &kmsg.StreamsGroupHeartbeatRequest{Group: "g", MemberID: "m", MemberEpoch: 1}},
			{req: &kmsg.StreamsGroupHeartbeatRequest{Group: "g", MemberID: "m", Topology: &kmsg.StreamsGroupHeartbeatRequestTopology{
				Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{SubtopologyID: "0", SourceTopics: strs("t")}}}}},
		},
		89: {
			{req: &kmsg.StreamsGroupDescribeRequest{Groups: strs("g")}, items: func(r kmsg.Request) int { return one(r.(*kmsg.StreamsGroupDescribeRequest).Groups) }},
			{req: &kmsg.StreamsGroupDescribeRequest{Groups: strs("g")}, resp: func() kmsg.Response {
				g := kmsg.NewStreamsGroupDescribeResponseGroup()
				g.Group = "g"
				g.Topology = &kmsg.StreamsGroupDescribeResponseGroupTopology{Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{{
					SubtopologyID: "0", StateChangelogTopics: []kmsg.TopicInfo{{Topic: "t"}}}}}
				g.Members = append(g.Members, kmsg.NewStreamsGroupDescribeResponseGroupMember())
				return &kmsg.StreamsGroupDescribeResponse{Groups: []kmsg.StreamsGroupDescribeResponseGroup{g}}
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.StreamsGroupDescribeResponse).Groups[0].Members) }},
		},
		75: {
			{req: &kmsg.DescribeTopicPartitionsRequest{Topics: []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}}},
			{req: &kmsg.DescribeTopicPartitionsRequest{}, resp: func() kmsg.Response {
				return &kmsg.DescribeTopicPartitionsResponse{Topics: []kmsg.DescribeTopicPartitionsResponseTopic{{Topic: &name}}}
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.DescribeTopicPartitionsResponse).Topics) }},
		},
		76: {{req: &kmsg.ShareGroupHeartbeatRequest{Version: 1, GroupID: "g"}}, {req: &kmsg.ShareGroupHeartbeatRequest{Version: 1, GroupID: "g", SubscribedTopicNames: strs("t")}}},
		77: {
			{req: &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: strs("g")}, items: func(r kmsg.Request) int { return one(r.(*kmsg.ShareGroupDescribeRequest).GroupIDs) }},
			{req: &kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: strs("g")}, resp: func() kmsg.Response {
				g := kmsg.NewShareGroupDescribeResponseGroup()
				g.GroupID = "g"
				m := kmsg.NewShareGroupDescribeResponseGroupMember()
				m.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{{Topic: "t", TopicID: tidT}}
				g.Members = append(g.Members, m)
				return &kmsg.ShareGroupDescribeResponse{Groups: []kmsg.ShareGroupDescribeResponseGroup{g}}
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.ShareGroupDescribeResponse).Groups[0].Members) }},
		},
		78: {
			{req: &kmsg.ShareFetchRequest{Version: 2, GroupID: kmsg.StringPtr("g"), Topics: []kmsg.ShareFetchRequestTopic{{TopicID: tidT, Partitions: []kmsg.ShareFetchRequestTopicPartition{{}}}}}},
			{req: &kmsg.ShareFetchRequest{Version: 2, GroupID: kmsg.StringPtr("g"), Topics: []kmsg.ShareFetchRequestTopic{{TopicID: tidT, Partitions: []kmsg.ShareFetchRequestTopicPartition{{}}}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.ShareFetchRequest).Topics) }},
		},
		79: {
			{req: &kmsg.ShareAcknowledgeRequest{Version: 2, GroupID: kmsg.StringPtr("g"), Topics: []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tidT, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{}}}}}},
			{req: &kmsg.ShareAcknowledgeRequest{Version: 2, GroupID: kmsg.StringPtr("g"), Topics: []kmsg.ShareAcknowledgeRequestTopic{{TopicID: tidT, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{}}}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.ShareAcknowledgeRequest).Topics) }},
		},
		80: {{req: &kmsg.AddRaftVoterRequest{VoterID: 4}}},
		81: {{req: &kmsg.RemoveRaftVoterRequest{VoterID: 3}}},
		84: {{req: &kmsg.ReadShareGroupStateRequest{GroupID: "g", Topics: []kmsg.ReadShareGroupStateRequestTopic{{TopicID: tidT, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{}}}}}}},
		85: {{req: &kmsg.WriteShareGroupStateRequest{Version: 1, GroupID: "g", Topics: []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tidT, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{}}}}}}},
		90: {
			{req: describeShare(true), items: func(r kmsg.Request) int { return one(r.(*kmsg.DescribeShareGroupOffsetsRequest).Groups) }},
			{req: describeShare(true), items: func(r kmsg.Request) int { return one(r.(*kmsg.DescribeShareGroupOffsetsRequest).Groups[0].Topics) }},
			{req: describeShare(false), resp: func() kmsg.Response {
				return &kmsg.DescribeShareGroupOffsetsResponse{Groups: []kmsg.DescribeShareGroupOffsetsResponseGroup{{GroupID: "g", Topics: []kmsg.DescribeShareGroupOffsetsResponseGroupTopic{{Topic: "t"}}}}}
			}, shown: func(r kmsg.Response) int { return one(r.(*kmsg.DescribeShareGroupOffsetsResponse).Groups[0].Topics) }},
		},
		91: {
			{req: &kmsg.AlterShareGroupOffsetsRequest{GroupID: "g", Topics: []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{}}}}}},
			{req: &kmsg.AlterShareGroupOffsetsRequest{GroupID: "g", Topics: []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{}}}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.AlterShareGroupOffsetsRequest).Topics) }},
		},
		92: {
			{req: &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "g", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}}},
			{req: &kmsg.DeleteShareGroupOffsetsRequest{GroupID: "g", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "t"}}},
				items: func(r kmsg.Request) int { return one(r.(*kmsg.DeleteShareGroupOffsetsRequest).Topics) }},
		},
	}
}

// allowAll allows User:alice everything on every resource, and denies
// her the grants given.
func allowAll(deny ...Grant) *Index {
	var acls []ACL
	for rt := ResourceTopic; rt <= ResourceUser; rt++ {
		acls = append(acls, a(Allow, "User:alice", OpAll, rt, PatternLiteral, Wildcard, "*"))
	}
	for _, g := range deny {
		acls = append(acls, a(Deny, "User:alice", g.Op, g.Resource, PatternLiteral, Wildcard, "*"))
	}
	return NewIndex(acls)
}

var alice = Session{Principal: User("alice"), Host: "10.0.0.1"}

// TestAPIs: for every check of every API, a principal allowed everything
// else but denied what the check needs gets Kafka's answer (the request
// rejected whole with the check's code; the item answered with it and
// left out of what is served; the item hidden from the answer), and the
// same request without the denial is served whole.
func TestAPIs(t *testing.T) {
	cfg := &Config{Enabled: true}
	all := samples()
	for _, api := range APIs {
		ss := all[api.Key]
		if len(ss) != len(api.Checks) {
			t.Errorf("%s: %d samples for %d checks", kmsg.NameForKey(api.Key), len(ss), len(api.Checks))
			continue
		}
		for i, chk := range api.Checks {
			s := ss[i]
			t.Run(kmsg.NameForKey(api.Key)+"/"+strconv.Itoa(i)+" "+chk.Op.String()+" "+chk.Resource.String(), func(t *testing.T) {
				deny := append([]Grant{chk.Grant}, chk.Or...)
				denied := Authorize(NewChecker(allowAll(deny...), cfg, alice), testEnv, s.req)
				allowed := Authorize(NewChecker(allowAll(), cfg, alice), testEnv, s.req)
				if allowed.Reject != nil {
					t.Fatalf("allowed everything, rejected: %+v", allowed.Reject)
				}
				if s.items != nil && s.items(allowed.Request) != 1 {
					t.Fatalf("allowed everything, served %d items", s.items(allowed.Request))
				}
				if codes := errorCodes(allowed.Finish(s.req.ResponseKind())); len(codes) != 0 {
					t.Fatalf("allowed everything, answered %v", codes)
				}
				switch chk.Scope {
				case Whole:
					if denied.Reject == nil {
						t.Fatal("denied, not rejected")
					}
					if codes := errorCodes(denied.Reject); !slices.Contains(codes, chk.Error.Code) {
						t.Fatalf("rejected with codes %v, want %s", codes, chk.Error.Message)
					}
					if denied.Reject.Key() != s.req.Key() || denied.Reject.GetVersion() != s.req.GetVersion() {
						t.Fatalf("reject is key %d v%d", denied.Reject.Key(), denied.Reject.GetVersion())
					}
				case PerItem:
					if denied.Reject != nil {
						if codes := errorCodes(denied.Reject); !slices.Contains(codes, chk.Error.Code) {
							t.Fatalf("rejected with codes %v, want %s", codes, chk.Error.Message)
						}
						return // every item denied: the denials are the whole answer
					}
					if n := s.items(denied.Request); n != 0 {
						t.Fatalf("denied, still serving %d items", n)
					}
					if codes := errorCodes(denied.Finish(s.req.ResponseKind())); !slices.Contains(codes, chk.Error.Code) {
						t.Fatalf("answered codes %v, want %s", codes, chk.Error.Message)
					}
				case Hidden:
					if denied.Reject != nil {
						t.Fatalf("denied, rejected: %+v", denied.Reject)
					}
					if n := s.shown(allowed.Finish(s.resp())); n != 1 {
						t.Fatalf("allowed everything, showed %d", n)
					}
					finished := denied.Finish(s.resp())
					if n := s.shown(finished); n != 0 {
						t.Fatalf("denied, still showing %d", n)
					}
					if codes := errorCodes(finished); chk.Error != nil && !slices.Contains(codes, chk.Error.Code) {
						t.Fatalf("answered codes %v, want %s", codes, chk.Error.Message)
					}
				}
			})
		}
	}
}

// TestEveryServedAPIHasRules: every API key docs/API.md lists as served,
// and the admin APIs of ACLs, quotas and SCRAM credentials, has an entry
// in APIs, and every entry's checks are dispatched by Authorize.
func TestEveryServedAPIHasRules(t *testing.T) {
	f, err := os.Open("../../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^\| (\d+) \| \w+ \|`)
	keys := []int16{29, 30, 31, 48, 49, 50, 51, 17, 36}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			k, _ := strconv.Atoi(m[1])
			keys = append(keys, int16(k))
		}
	}
	if len(keys) < 40 {
		t.Fatalf("read only %d keys from docs/API.md", len(keys))
	}
	for _, k := range keys {
		if _, ok := APIFor(k); !ok {
			t.Errorf("%s (key %d) has no entry in APIs", kmsg.NameForKey(k), k)
		}
	}
	for i, api := range APIs {
		if i > 0 && APIs[i-1].Key >= api.Key {
			t.Errorf("APIs out of key order at %d", api.Key)
		}
	}
}
