package group

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every group request a node does not coordinate is answered
// NOT_COORDINATOR where Kafka puts the code; one it coordinates is left
// to the coordinator.
func TestNotCoordinated(t *testing.T) {
	nc := kerr.NotCoordinator.Code
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0}, {Partition: 1}}
	commit.Topics = append(commit.Topics, ct)
	fetch8 := kmsg.NewPtrOffsetFetchRequest()
	fetch8.Version = 8
	fetch8.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "here"}, {Group: "g"}}
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		code func(kmsg.Response) []int16
	}{
		{"JoinGroup", &kmsg.JoinGroupRequest{Group: "g"}, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.JoinGroupResponse).ErrorCode} }},
		{"SyncGroup", &kmsg.SyncGroupRequest{Group: "g"}, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.SyncGroupResponse).ErrorCode} }},
		{"Heartbeat", &kmsg.HeartbeatRequest{Group: "g"}, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.HeartbeatResponse).ErrorCode} }},
		{"LeaveGroup", &kmsg.LeaveGroupRequest{Group: "g"}, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.LeaveGroupResponse).ErrorCode} }},
		{"ConsumerGroupHeartbeat", &kmsg.ConsumerGroupHeartbeatRequest{Group: "g"}, func(r kmsg.Response) []int16 {
			return []int16{r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode}
		}},
		{"OffsetDelete", &kmsg.OffsetDeleteRequest{Group: "g"}, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.OffsetDeleteResponse).ErrorCode} }},
		{"OffsetCommit", commit, func(r kmsg.Response) []int16 {
			var out []int16
			for _, t := range r.(*kmsg.OffsetCommitResponse).Topics {
				for _, p := range t.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
			return out
		}},
		{"OffsetFetch v1", &kmsg.OffsetFetchRequest{Version: 1, Group: "g"}, func(r kmsg.Response) []int16 { return []int16{r.(*kmsg.OffsetFetchResponse).ErrorCode} }},
		{"OffsetFetch v8", fetch8, func(r kmsg.Response) []int16 {
			var out []int16
			for _, g := range r.(*kmsg.OffsetFetchResponse).Groups {
				out = append(out, g.ErrorCode)
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := NotCoordinated(tc.req, func(string) bool { return true }); ok {
				t.Fatal("answered a request this node coordinates")
			}
			resp, ok := NotCoordinated(tc.req, func(g string) bool { return g == "here" })
			if !ok {
				t.Fatal("left a request for a group coordinated elsewhere to the coordinator")
			}
			codes := tc.code(resp)
			if len(codes) == 0 {
				t.Fatal("no error code in the answer")
			}
			for _, c := range codes {
				if c != nc {
					t.Fatalf("codes %v, want NOT_COORDINATOR everywhere", codes)
				}
			}
		})
	}
}
