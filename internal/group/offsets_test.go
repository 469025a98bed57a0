package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsSimpleGroup: a consumer that assigns itself partitions
// commits with generation -1 to a group that does not exist; the group is
// created to hold the offsets.
func TestOffsetsSimpleGroup(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 4)
	resp := h.commit(commitReq("simple", "", -1, "t", map[int32]int64{0: 10, 2: 30}))
	allCodes(t, "simple commit", commitCodes(resp), 0)
	if resp.Topics[0].Topic != "t" || resp.Topics[0].Partitions[1].Partition != 2 {
		t.Fatalf("response shape: %+v", resp.Topics)
	}
	got := h.fetch("simple", "t", 0, 1, 2)
	if got[0] != 10 || got[1] != -1 || got[2] != 30 {
		t.Fatalf("fetched %v", got)
	}
	if all := h.fetch("simple", ""); len(all) != 2 || all[2] != 30 {
		t.Fatalf("fetch all: %v", all)
	}

	// Metadata and leader epoch come back as committed.
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 7
	r.Group = "simple"
	r.RequireStable = true
	r.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{2, 3}}}
	fr, err := h.c.OffsetFetch(ctxb, r)
	if err != nil {
		t.Fatal(err)
	}
	p := fr.Topics[0].Partitions
	if p[0].Offset != 30 || p[0].LeaderEpoch != 7 || *p[0].Metadata != "md-2" {
		t.Fatalf("v7 fetch of a committed partition: %+v", p[0])
	}
	if p[1].Offset != -1 || p[1].LeaderEpoch != -1 || p[1].Metadata == nil || *p[1].Metadata != "" {
		t.Fatalf("v7 fetch of an uncommitted partition: %+v", p[1])
	}

	// Simple groups are listed, without a protocol type.
	lg := h.listGroups(5, nil, nil)
	if len(lg) != 1 || lg[0].Group != "simple" || lg[0].ProtocolType != "" || lg[0].GroupState != "Empty" || lg[0].GroupType != "classic" {
		t.Fatalf("list: %+v", lg)
	}
	// Fetching for a group that does not exist answers -1, no error.
	if got := h.fetch("nobody", "t", 0); got[0] != -1 {
		t.Fatalf("unknown group fetch: %v", got)
	}
	if all := h.fetch("nobody", ""); len(all) != 0 {
		t.Fatalf("unknown group fetch all: %v", all)
	}
}

func (h *harness) listGroups(version int16, states, types []string) []kmsg.ListGroupsResponseGroup {
	h.t.Helper()
	r := kmsg.NewPtrListGroupsRequest()
	r.Version = version
	r.StatesFilter = states
	r.TypesFilter = types
	resp, err := h.c.ListGroups(ctxb, r)
	if err != nil {
		h.t.Fatal(err)
	}
	expectCode(h.t, "list groups", resp.ErrorCode, 0)
	return resp.Groups
}

func TestOffsetCommitValidation(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	const g = "g"
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))

	bigMeta := commitReq(g, id1, 1, "t", map[int32]int64{0: 1})
	bigMeta.Topics[0].Partitions[0].Metadata = kmsg.StringPtr(strings.Repeat("x", 4097))
	v8 := commitReq("missing", "m", 3, "t", map[int32]int64{0: 1})
	v8.Version = 8
	simpleInLiveGroup := commitReq(g, "", -1, "t", map[int32]int64{0: 1})
	for _, tc := range []struct {
		name string
		req  *kmsg.OffsetCommitRequest
		want int16
	}{
		{"member commit", commitReq(g, id1, 1, "t", map[int32]int64{0: 5, 1: 6}), 0},
		{"wrong generation", commitReq(g, id1, 2, "t", map[int32]int64{0: 5}), kerr.IllegalGeneration.Code},
		{"unknown member", commitReq(g, "ghost", 1, "t", map[int32]int64{0: 5}), kerr.UnknownMemberID.Code},
		{"generation -1 to a live group", simpleInLiveGroup, kerr.UnknownMemberID.Code},
		{"unknown topic", commitReq(g, id1, 1, "nope", map[int32]int64{0: 5}), kerr.UnknownTopicOrPartition.Code},
		{"partition out of range", commitReq(g, id1, 1, "t", map[int32]int64{5: 5}), kerr.UnknownTopicOrPartition.Code},
		{"metadata too large", bigMeta, kerr.OffsetMetadataTooLarge.Code},
		{"missing group v9", commitReq("missing", "m", 3, "t", map[int32]int64{0: 1}), kerr.GroupIDNotFound.Code},
		{"missing group v8", v8, kerr.IllegalGeneration.Code},
		{"empty group id", commitReq("", "m", 3, "t", map[int32]int64{0: 1}), kerr.InvalidGroupID.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allCodes(t, tc.name, commitCodes(h.commit(tc.req)), tc.want)
		})
	}
	if got := h.fetch(g, "t", 0, 1); got[0] != 5 || got[1] != 6 {
		t.Fatalf("only the valid commit should have landed: %v", got)
	}
	if h.c.Stats().OffsetsCommitted != 2 {
		t.Fatalf("committed %d partitions, want 2", h.c.Stats().OffsetsCommitted)
	}
}

// TestOffsetTopicIDs: OffsetCommit and OffsetFetch v10 name topics by id.
func TestOffsetTopicIDs(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 9, 3)
	req := commitReq("g", "", -1, "", map[int32]int64{1: 11})
	req.Version = 10
	req.Topics[0].TopicID = tid(9)
	unknown := kmsg.NewOffsetCommitRequestTopic()
	unknown.TopicID = tid(42)
	unknown.Partitions = []kmsg.OffsetCommitRequestTopicPartition{kmsg.NewOffsetCommitRequestTopicPartition()}
	req.Topics = append(req.Topics, unknown)
	resp := h.commit(req)
	expectCode(t, "known id", resp.Topics[0].Partitions[0].ErrorCode, 0)
	expectCode(t, "unknown id", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicID.Code)
	if resp.Topics[0].TopicID != tid(9) {
		t.Fatal("v10 response must echo the topic id")
	}
	// The name-based fetch sees the same offset.
	if got := h.fetch("g", "t", 1); got[1] != 11 {
		t.Fatalf("by name: %v", got)
	}
	fr := kmsg.NewPtrOffsetFetchRequest()
	fr.Version = 10
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	fr.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	out, err := h.c.OffsetFetch(ctxb, fr)
	if err != nil {
		t.Fatal(err)
	}
	topics := out.Groups[0].Topics
	if len(topics) != 1 || topics[0].TopicID != tid(9) || topics[0].Partitions[0].Offset != 11 {
		t.Fatalf("v10 fetch all: %+v", topics)
	}
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.TopicID = tid(42)
	rt.Partitions = []int32{0}
	fr.Groups[0].Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
	out, _ = h.c.OffsetFetch(ctxb, fr)
	expectCode(t, "fetch by unknown id", out.Groups[0].Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID.Code)
}

// TestOffsetFetchBatch: OffsetFetch v8 answers several groups at once, in
// request order, across shards.
func TestOffsetFetchBatch(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 1)
	names := []string{"a", "b", "c", "d", "e", "f"}
	for i, n := range names {
		h.commit(commitReq(n, "", -1, "t", map[int32]int64{0: int64(i)}))
	}
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	for _, n := range append(names, "") {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = n
		r.Groups = append(r.Groups, rg)
	}
	resp, err := h.c.OffsetFetch(ctxb, r)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		g := resp.Groups[i]
		if g.Group != n || g.Topics[0].Partitions[0].Offset != int64(i) {
			t.Fatalf("group %d: %+v", i, g)
		}
	}
	expectCode(t, "empty group id", resp.Groups[len(names)].ErrorCode, kerr.InvalidGroupID.Code)
}

func TestOffsetDelete(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	h.addTopic("other", 2, 2)
	const g = "g"
	h.commit(commitReq(g, "", -1, "t", map[int32]int64{0: 1, 1: 2}))
	h.commit(commitReq(g, "", -1, "other", map[int32]int64{0: 3}))
	id1, _ := h.joinNew(g, "t")
	h.syncGroup(syncReq(g, id1, 1, nil))

	del := func(group, topic string, ps ...int32) *kmsg.OffsetDeleteResponse {
		r := kmsg.NewPtrOffsetDeleteRequest()
		r.Group = group
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		for _, p := range ps {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteRequestTopicPartition{Partition: p})
		}
		r.Topics = append(r.Topics, rt)
		resp, err := h.c.OffsetDelete(ctxb, r)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// The live consumer group subscribes to t: its offsets stay.
	resp := del(g, "t", 0)
	expectCode(t, "top level", resp.ErrorCode, 0)
	expectCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic.Code)
	// Nobody subscribes to other: its offset goes.
	resp = del(g, "other", 0, 1)
	expectCode(t, "unsubscribed topic", resp.Topics[0].Partitions[0].ErrorCode, 0)
	expectCode(t, "never committed partition", resp.Topics[0].Partitions[1].ErrorCode, 0)
	if got := h.fetch(g, "other", 0); got[0] != -1 {
		t.Fatalf("deleted offset still there: %v", got)
	}
	expectCode(t, "unknown topic", del(g, "gone", 0).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition.Code)
	expectCode(t, "unknown group", del("nobody", "t", 0).ErrorCode, kerr.GroupIDNotFound.Code)

	// A live group of another protocol type can not lose offsets.
	jr := joinReq("connect", "", "t")
	jr.ProtocolType = "connect"
	jr.Version = 3
	h.join(jr)
	h.commit(commitReq("connect", "", -1, "other", map[int32]int64{0: 1}))
	expectCode(t, "non-consumer live group", del("connect", "other", 0).ErrorCode, kerr.NonEmptyGroup.Code)

	// Once the member leaves, subscriptions are gone and so are offsets.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = g
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: id1}}
	h.c.LeaveGroup(ctxb, lr)
	expectCode(t, "empty group", del(g, "t", 0).Topics[0].Partitions[0].ErrorCode, 0)
	if got := h.fetch(g, "t", 0, 1); got[0] != -1 || got[1] != 2 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestDeleteGroups(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 1)
	h.commit(commitReq("empty", "", -1, "t", map[int32]int64{0: 4}))
	id1, _ := h.joinNew("live", "t")
	h.syncGroup(syncReq("live", id1, 1, nil))

	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Version = 2
	r.Groups = []string{"empty", "live", "nobody"}
	resp, err := h.c.DeleteGroups(ctxb, r)
	if err != nil {
		t.Fatal(err)
	}
	expectCode(t, "empty group", resp.Groups[0].ErrorCode, 0)
	expectCode(t, "live group", resp.Groups[1].ErrorCode, kerr.NonEmptyGroup.Code)
	expectCode(t, "unknown group", resp.Groups[2].ErrorCode, kerr.GroupIDNotFound.Code)
	if got := h.fetch("empty", "t", 0); got[0] != -1 {
		t.Fatalf("offsets survived deletion: %v", got)
	}
	if d := h.describe("empty"); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("describe deleted group: %+v", d)
	}
	// Deleted for good: after a restart it stays gone.
	h.restart()
	if got := h.fetch("empty", "t", 0); got[0] != -1 {
		t.Fatalf("offsets back after restart: %v", got)
	}
	if lg := h.listGroups(5, nil, nil); len(lg) != 1 || lg[0].Group != "live" {
		t.Fatalf("groups after restart: %+v", lg)
	}
}

func TestListGroupsFilters(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	h.commit(commitReq("simple", "", -1, "t", map[int32]int64{0: 1}))
	id1, _ := h.joinNew("stable", "t")
	h.syncGroup(syncReq("stable", id1, 1, nil))
	m := h.newCGMember("cg", "m1", "t")
	m.mustBeat()

	names := func(gs []kmsg.ListGroupsResponseGroup) string {
		var out []string
		for _, g := range gs {
			out = append(out, g.Group+":"+g.GroupState+":"+g.GroupType+":"+g.ProtocolType)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name    string
		version int16
		states  []string
		types   []string
		want    string
	}{
		{"all", 5, nil, nil, "cg:Stable:consumer:consumer simple:Empty:classic: stable:Stable:classic:consumer"},
		{"states, any case", 5, []string{"stable "}, nil, "cg:Stable:consumer:consumer stable:Stable:classic:consumer"},
		{"types", 5, nil, []string{"Consumer"}, "cg:Stable:consumer:consumer"},
		{"states and types", 5, []string{"Empty"}, []string{"classic"}, "simple:Empty:classic:"},
		{"unknown type", 5, nil, []string{"share"}, ""},
		{"v3 ignores filters", 3, []string{"Dead"}, []string{"share"}, "cg:Stable:consumer:consumer simple:Empty:classic: stable:Stable:classic:consumer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(h.listGroups(tc.version, tc.states, tc.types)); got != tc.want {
				t.Fatalf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestOffsetExpiry: offsets expire after offsets.retention.minutes under
// Kafka's rules, and an empty group with nothing left is deleted.
func TestOffsetExpiry(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.OffsetsRetention = time.Hour
		c.OffsetsRetentionCheckInterval = time.Minute
	})
	h.addTopic("t", 1, 2)
	h.commit(commitReq("simple", "", -1, "t", map[int32]int64{0: 1}))
	// A live group's subscribed offsets never expire.
	jr := joinReq("live", "", "t")
	jr.Version = 3
	jr.SessionTimeoutMillis = 30 * 60 * 1000
	id1 := h.join(jr).MemberID
	h.syncGroup(syncReq("live", id1, 1, nil))
	h.commit(commitReq("live", id1, 1, "t", map[int32]int64{0: 7}))
	// An explicit retention (v2-v4) wins over the default.
	short := commitReq("short", "", -1, "t", map[int32]int64{1: 9})
	short.Version = 4
	short.RetentionTimeMillis = 10 * 60 * 1000
	h.commit(short)

	for range 11 {
		h.advance(time.Minute)
		h.heartbeat("live", id1, 1)
	}
	if got := h.fetch("short", "t", 1); got[1] != -1 {
		t.Fatalf("explicit retention not applied: %v", got)
	}
	if got := h.fetch("simple", "t", 0); got[0] != 1 {
		t.Fatalf("expired too early: %v", got)
	}
	for range 50 {
		h.advance(time.Minute)
		h.heartbeat("live", id1, 1)
	}
	if got := h.fetch("simple", "t", 0); got[0] != -1 {
		t.Fatalf("not expired after the retention: %v", got)
	}
	if got := h.fetch("live", "t", 0); got[0] != 7 {
		t.Fatalf("subscribed offset of a live group expired: %v", got)
	}
	lg := h.listGroups(5, nil, nil)
	if len(lg) != 1 || lg[0].Group != "live" {
		t.Fatalf("empty groups without offsets should be deleted: %+v", lg)
	}
	if h.c.Stats().OffsetsExpired != 2 {
		t.Fatalf("expired %d, want 2", h.c.Stats().OffsetsExpired)
	}
}

// TestOffsetsOfDeletedTopics: when a topic is deleted (or deleted and
// created again) its committed offsets go, as in Kafka.
func TestOffsetsOfDeletedTopics(t *testing.T) {
	h := newHarness(t)
	h.addTopic("t", 1, 2)
	h.addTopic("u", 2, 1)
	h.addTopic("keep", 3, 1)
	h.commit(commitReq("g", "", -1, "t", map[int32]int64{0: 1, 1: 2}))
	h.commit(commitReq("g", "", -1, "u", map[int32]int64{0: 3}))
	h.commit(commitReq("g", "", -1, "keep", map[int32]int64{0: 4}))
	h.topics.Delete("t")
	h.addTopic("u", 9, 1) // recreated: a new id
	h.c.TopicsChanged()
	h.sync()
	if got := h.fetch("g", "t", 0, 1); got[0] != -1 || got[1] != -1 {
		t.Fatalf("deleted topic's offsets left: %v", got)
	}
	if got := h.fetch("g", "u", 0); got[0] != -1 {
		t.Fatalf("recreated topic's offset left: %v", got)
	}
	if got := h.fetch("g", "keep", 0); got[0] != 4 {
		t.Fatalf("live topic's offset lost: %v", got)
	}
	h.restart()
	if all := h.fetch("g", ""); len(all) != 1 {
		t.Fatalf("offsets back after restart: %v", all)
	}
}
