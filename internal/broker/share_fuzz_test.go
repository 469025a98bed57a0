package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/protocol"
	"weir/internal/server"
)

// FuzzShareRequests hands the share APIs arbitrary bodies, against a
// broker with a share group, a topic and records: no input may panic the
// broker, and every reply must complete.
func FuzzShareRequests(f *testing.F) {
	tb := startBroker(f, f.TempDir(), func(c *Config) {
		shortShareLocks(c)
		c.MaxPartitionsPerTopic = 16
	})
	conn := server.ConnInfo{ID: 1, Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}}
	serve := func(ctx context.Context, req kmsg.Request) *server.Reply {
		return tb.b.Serve(ctx, &server.Request{Key: req.Key(), Version: req.GetVersion(), Body: req, ClientID: "fuzz", Conn: conn})
	}
	ctx := context.Background()
	server.WaitReply(serve(ctx, &kmsg.CreateTopicsRequest{Version: 7, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "fz", NumPartitions: 2, ReplicationFactor: 1}}}), 5*time.Second)
	server.WaitReply(serve(ctx, &kmsg.ProduceRequest{Version: 9, Acks: 1, TimeoutMillis: 1000, Topics: []kmsg.ProduceRequestTopic{{Topic: "fz", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: idempotentBatch(-1, -1, -1, "x")}}}}}), 5*time.Second)
	server.WaitReply(serve(ctx, &kmsg.ShareGroupHeartbeatRequest{Version: 1, GroupID: "fz", MemberID: "m", SubscribedTopicNames: []string{"fz"}}), 5*time.Second)
	id := tb.b.lookupTopic("fz").id
	member, group := kmsg.StringPtr("m"), kmsg.StringPtr("fz")
	acks := []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{1, 2, 3}}}
	seeds := []kmsg.Request{
		&kmsg.ShareGroupHeartbeatRequest{Version: 1, GroupID: "fz", MemberID: "m2", SubscribedTopicNames: []string{"fz"}},
		&kmsg.ShareGroupDescribeRequest{Version: 1, GroupIDs: []string{"fz", ""}},
		&kmsg.ShareFetchRequest{Version: 2, GroupID: group, MemberID: member, MaxWaitMillis: 1, MaxRecords: 2, BatchSize: 2, ShareAcquireMode: 1,
			Topics: []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}},
		&kmsg.ShareFetchRequest{Version: 2, GroupID: group, MemberID: member, ShareSessionEpoch: 1, MaxWaitMillis: 1, MaxRecords: 5,
			Topics:              []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}}},
			ForgottenTopicsData: []kmsg.ShareFetchRequestForgottenTopicsData{{TopicID: id, Partitions: []int32{1}}}},
		&kmsg.ShareAcknowledgeRequest{Version: 2, GroupID: group, MemberID: member, ShareSessionEpoch: 2, IsRenewAck: true,
			Topics: []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{4}}}}}}}},
		&kmsg.DescribeShareGroupOffsetsRequest{Version: 1, Groups: []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "fz"}}},
		&kmsg.AlterShareGroupOffsetsRequest{GroupID: "fz2", Topics: []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "fz", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 1}}}}},
		&kmsg.DeleteShareGroupOffsetsRequest{GroupID: "fz2", Topics: []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "fz"}}},
		&kmsg.IncrementalAlterConfigsRequest{Resources: []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "fz",
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.record.lock.duration.ms", Value: kmsg.StringPtr("1000")}}}}},
		&kmsg.DescribeConfigsRequest{Version: 4, Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "fz"}}},
		&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"share"}},
		&kmsg.DeleteGroupsRequest{Version: 2, Groups: []string{"fz", "fz2"}},
	}
	for _, s := range seeds {
		f.Add(s.Key(), s.GetVersion(), s.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		h, ok := handlers[key]
		if !ok || version < h.min || version > h.max || protocol.Check(key, version, body) != nil {
			return
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return
		}
		// Parked fetches end with the context: keep it short, so that
		// inputs with long waits do not stall the fuzzer.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		reply := serve(ctx, req)
		if reply == nil {
			t.Fatalf("nil reply for %s v%d", kmsg.NameForKey(key), version)
		}
		if !server.WaitReply(reply, 5*time.Second) {
			t.Fatalf("%s v%d reply never completed", kmsg.NameForKey(key), version)
		}
	})
}
