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

// FuzzServe decodes arbitrary bytes as a request body of every served API
// and version and hands what decodes to the broker: no input may panic it,
// and every reply must complete.
func FuzzServe(f *testing.F) { fuzzServe(f, false) }

// FuzzServeNullStorage fuzzes the benchmarking mode's own produce and
// fetch paths (null_storage.go).
func FuzzServeNullStorage(f *testing.F) { fuzzServe(f, true) }

func fuzzServe(f *testing.F, null bool) {
	seeds := []kmsg.Request{
		&kmsg.MetadataRequest{Version: 12, Topics: []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("fz")}}, AllowAutoTopicCreation: true},
		&kmsg.ProduceRequest{Version: 9, Acks: -1, TimeoutMillis: 100, Topics: []kmsg.ProduceRequestTopic{{Topic: "fz", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: idempotentBatch(-1, -1, -1, "x")}}}}},
		&kmsg.FetchRequest{Version: 12, MaxWaitMillis: 1, Topics: []kmsg.FetchRequestTopic{{Topic: "fz", Partitions: []kmsg.FetchRequestTopicPartition{{PartitionMaxBytes: 100}}}}},
		&kmsg.CreateTopicsRequest{Version: 7, Topics: []kmsg.CreateTopicsRequestTopic{{Topic: "fz2", NumPartitions: 2, ReplicationFactor: 1}}},
		&kmsg.ListOffsetsRequest{Version: 7, Topics: []kmsg.ListOffsetsRequestTopic{{Topic: "fz", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -3}}}}},
		&kmsg.JoinGroupRequest{Version: 9, Group: "g", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 100, ProtocolType: "consumer", Protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range"}}},
		&kmsg.OffsetCommitRequest{Version: 8, Group: "g", Generation: -1, Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "fz", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Offset: 1}}}}},
		&kmsg.DescribeTopicPartitionsRequest{},
		&kmsg.DeleteRecordsRequest{Version: 2, Topics: []kmsg.DeleteRecordsRequestTopic{{Topic: "fz", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Offset: -1}}}}},
	}
	for _, s := range seeds {
		f.Add(s.Key(), s.GetVersion(), s.AppendTo(nil))
	}
	tb := startBroker(f, f.TempDir(), func(c *Config) {
		c.Group.NoInitialRebalanceDelay = true
		c.MaxPartitionsPerTopic = 16
		c.NullStorage = null
	})
	conn := server.ConnInfo{ID: 1, Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}}
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		h, ok := handlers[key]
		// The server refuses what protocol.Check refuses before decoding.
		if !ok || version < h.min || version > h.max || protocol.Check(key, version, body) != nil {
			return
		}
		req := kmsg.RequestForKey(key)
		req.SetVersion(version)
		if req.ReadFrom(body) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		reply := tb.b.Serve(ctx, &server.Request{Key: key, Version: version, Body: req, ClientID: "fuzz", Conn: conn})
		if reply == nil {
			t.Fatalf("nil reply for %s v%d", kmsg.NameForKey(key), version)
		}
		if !server.WaitReply(reply, 5*time.Second) {
			t.Fatalf("%s v%d reply never completed", kmsg.NameForKey(key), version)
		}
	})
}
