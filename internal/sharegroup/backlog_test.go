package sharegroup

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
	"weir/internal/wiretag"
)

// A ShareFetch that asks for the backlog (wiretag.ShareFetchBacklogWanted)
// is answered with, for each partition of the session loaded here, the
// records still to be acquired; one that does not ask gets no tag.
func TestShareFetchTellsTheBacklog(t *testing.T) {
	h := newFakeHost()
	id := h.addTopic(t, "q", 3, 10)
	m := testManager(t, h, newSlowState())
	ctx := context.Background()
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "g", "member-1", 0, []string{"q"}
	if resp := m.Heartbeat(ctx, hb, share.ClientInfo{}); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	fetch := func(epoch int32, maxRecords int32, want bool) *kmsg.ShareFetchResponse {
		r := kmsg.NewPtrShareFetchRequest()
		r.Version, r.GroupID, r.MemberID = 2, kmsg.StringPtr("g"), kmsg.StringPtr("member-1")
		r.ShareSessionEpoch, r.MaxRecords, r.BatchSize, r.MaxBytes = epoch, maxRecords, maxRecords, 1<<20
		r.ShareAcquireMode = int8(share.RecordLimit)
		if epoch == 0 {
			t := kmsg.NewShareFetchRequestTopic()
			t.TopicID = id
			for p := range int32(3) {
				tp := kmsg.NewShareFetchRequestTopicPartition()
				tp.Partition = p
				t.Partitions = append(t.Partitions, tp)
			}
			r.Topics = append(r.Topics, t)
		}
		if want {
			wiretag.SetShareFetchBacklogWanted(&r.UnknownTags)
		}
		f := m.ShareFetch(ctx, r)
		if !f.Ready() {
			t.Fatal("a fetch with records waiting parked")
		}
		return f.Response(func(*Records) []byte { return nil })
	}
	// Each fetch starts at another partition: after three, every
	// partition of the session is loaded.
	var resp *kmsg.ShareFetchResponse
	for epoch := range int32(3) {
		if resp = fetch(epoch, 4, true); resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	got, ok, err := wiretag.ShareFetchBacklogOf(&resp.UnknownTags)
	if !ok || err != nil {
		t.Fatalf("no backlog in the answer: %v %v", ok, err)
	}
	var total int64
	byPart := map[int32]int64{}
	for _, e := range got {
		if e.TopicID != id {
			t.Fatalf("entry for another topic: %+v", e)
		}
		byPart[e.Partition] = e.Records
		total += e.Records
	}
	// 30 records, 12 acquired and not acknowledged: 18 wait, 6 in each.
	if len(byPart) != 3 || total != 18 || byPart[0] != 6 || byPart[2] != 6 {
		t.Fatalf("backlog %v (total %d), want 6 records in each of the 3 partitions", byPart, total)
	}
	resp = fetch(3, 4, false)
	if _, ok, _ := wiretag.ShareFetchBacklogOf(&resp.UnknownTags); ok {
		t.Fatal("a fetch that did not ask got the backlog")
	}
}
