package protocol

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchRequests are requests of the shapes clients send most, at the
// versions current clients use.
func benchRequests() []kmsg.Request {
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks, produce.TimeoutMillis = 11, -1, 30000
	for i := range 4 {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = fmt.Sprintf("orders-%d", i)
		for p := range 8 {
			part := kmsg.NewProduceRequestTopicPartition()
			part.Partition, part.Records = int32(p), make([]byte, 1024)
			t.Partitions = append(t.Partitions, part)
		}
		produce.Topics = append(produce.Topics, t)
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 16
	for i := range 10 {
		t := kmsg.NewFetchRequestTopic()
		t.TopicID = [16]byte{byte(i)}
		for p := range 10 {
			part := kmsg.NewFetchRequestTopicPartition()
			part.Partition, part.FetchOffset = int32(p), 1<<20
			t.Partitions = append(t.Partitions, part)
		}
		fetch.Topics = append(fetch.Topics, t)
	}

	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 12
	for i := range 100 {
		t := kmsg.NewMetadataRequestTopic()
		name := fmt.Sprintf("topic-%03d", i)
		t.Topic = &name
		metadata.Topics = append(metadata.Topics, t)
	}

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version, commit.Group, commit.MemberID, commit.Generation = 9, "group", "member-1", 4
	for i := range 10 {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = fmt.Sprintf("orders-%d", i)
		for p := range 10 {
			part := kmsg.NewOffsetCommitRequestTopicPartition()
			part.Partition, part.Offset = int32(p), 12345
			meta := "m"
			part.Metadata = &meta
			t.Partitions = append(t.Partitions, part)
		}
		commit.Topics = append(commit.Topics, t)
	}

	apiVersions := kmsg.NewPtrApiVersionsRequest()
	apiVersions.Version, apiVersions.ClientSoftwareName, apiVersions.ClientSoftwareVersion = 4, "weir", "1.0"

	return []kmsg.Request{produce, fetch, metadata, commit, apiVersions}
}

// BenchmarkCheck compares Check with kmsg's own decode of the same body:
// Check is what every request pays on top of decoding.
func BenchmarkCheck(b *testing.B) {
	for _, req := range benchRequests() {
		name := fmt.Sprintf("%s-v%d", kmsg.NameForKey(req.Key()), req.GetVersion())
		body := req.AppendTo(nil)
		b.Run("check/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if err := Check(req.Key(), req.GetVersion(), body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("kmsg/"+name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				r := kmsg.RequestForKey(req.Key())
				r.SetVersion(req.GetVersion())
				if err := r.ReadFrom(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCheckHostile measures Check on the bodies kmsg amplifies
// (hostileTagCount, hostileArray).
func BenchmarkCheckHostile(b *testing.B) {
	for _, tc := range []struct {
		name         string
		key, version int16
		body         []byte
	}{{"tag-count", 18, 3, hostileTagCount()}, {"array-length", 3, 1, hostileArray()}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if Check(tc.key, tc.version, tc.body) == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}
