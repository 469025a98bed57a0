package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
	"weir/internal/sharegroup"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go's share consumer (a third-party KIP-932 client) against the
// broker: two members of one group, in both acquire modes, receive every
// record once between them.
func TestShareKgoConsumers(t *testing.T) {
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("strict=%v", strict), func(t *testing.T) {
			tb, p := shareSetup(t, t.TempDir(), 3, "kg", "share.heartbeat.interval.ms", "100")
			ctx := testCtx(t)
			const n = 600
			var mu sync.Mutex
			seen := map[string]int{}
			by := map[int]int{}
			var wg sync.WaitGroup
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			for i := range 2 {
				opts := []kgo.Opt{kgo.ShareGroup("kg"), kgo.ConsumeTopics("q"), kgo.ShareMaxRecords(50)}
				if strict {
					opts = append(opts, kgo.ShareMaxRecordsStrict())
				}
				c := newClient(t, tb.addr, opts...)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for cctx.Err() == nil {
						fs := c.PollFetches(cctx)
						fs.EachRecord(func(r *kgo.Record) {
							mu.Lock()
							seen[string(r.Value)]++
							by[i]++
							mu.Unlock()
						})
					}
				}()
			}
			// Produce once both members are in the group, so that both get
			// records.
			eventually(t, 30*time.Second, func() error {
				d := tb.b.shares.Describe("kg")
				if len(d.Members) != 2 {
					return fmt.Errorf("%d members in the group", len(d.Members))
				}
				for _, m := range d.Members {
					if m.MemberEpoch != d.AssignmentEpoch {
						return fmt.Errorf("member %s at epoch %d, assignment epoch %d", m.MemberID, m.MemberEpoch, d.AssignmentEpoch)
					}
				}
				return nil
			})
			for part := range int32(3) {
				produceN(t, ctx, p, "q", part, int(part)*n/3, n/3, 25)
			}
			eventually(t, 30*time.Second, func() error {
				mu.Lock()
				defer mu.Unlock()
				if len(seen) < n {
					return fmt.Errorf("%d of %d records seen", len(seen), n)
				}
				return nil
			})
			cancel()
			wg.Wait()
			for v, k := range seen {
				if k != 1 {
					t.Errorf("%s delivered %d times", v, k)
				}
			}
			if by[0] == 0 || by[1] == 0 {
				t.Errorf("one member got nothing: %v", by)
			}
		})
	}
}

func TestShareGroupAdmin(t *testing.T) {
	tb, p := shareSetup(t, t.TempDir(), 2, "sg")
	ctx := testCtx(t)
	produceN(t, ctx, p, "q", 0, 0, 10, 10)
	m := newShareMember(t, tb, "sg", "m1")
	m.join(ctx, "q")
	if !slices.Equal(m.parts, []int32{0, 1}) {
		t.Fatalf("assignment %v", m.parts)
	}
	got := records(t, m.fetch(ctx, fetchOpts{maxWait: time.Second}))
	if err := ackErrors(m.fetch(ctx, fetchOpts{acks: ackAll(got[:4], 1)})); err != nil {
		t.Fatal(err)
	}

	// ShareGroupDescribe.
	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{"sg", "nope", ""}
	dresp := request[*kmsg.ShareGroupDescribeResponse](t, ctx, p, dreq)
	g := dresp.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || len(g.Members) != 1 || g.Members[0].MemberID != "m1" || g.Assignor != "simple" ||
		len(g.Members[0].Assignment.TopicPartitions) != 1 || g.Members[0].Assignment.TopicPartitions[0].Topic != "q" {
		t.Fatalf("describe: %+v", g)
	}
	if dresp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code || dresp.Groups[2].ErrorCode != kerr.InvalidGroupID.Code {
		t.Fatalf("describe unknown/empty: %v %v", dresp.Groups[1].ErrorCode, dresp.Groups[2].ErrorCode)
	}

	// ListGroups, with and without the type filter.
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 5
	lreq.TypesFilter = []string{"Share"}
	lresp := request[*kmsg.ListGroupsResponse](t, ctx, p, lreq)
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != "sg" || lresp.Groups[0].GroupType != "share" || lresp.Groups[0].ProtocolType != "share" || lresp.Groups[0].GroupState != "Stable" {
		t.Fatalf("list share groups: %+v", lresp.Groups)
	}
	lreq.TypesFilter = []string{"consumer"}
	if lresp = request[*kmsg.ListGroupsResponse](t, ctx, p, lreq); len(lresp.Groups) != 0 {
		t.Fatalf("consumer filter lists %+v", lresp.Groups)
	}

	// DescribeGroups: not a classic group.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Version = 6
	dg.Groups = []string{"sg"}
	dgr := request[*kmsg.DescribeGroupsResponse](t, ctx, p, dg)
	if dgr.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code || deref(dgr.Groups[0].ErrorMessage) != "Group sg is not a classic group." {
		t.Fatalf("describe groups: %+v", dgr.Groups[0])
	}

	// DescribeShareGroupOffsets v1: all partitions, then named ones.
	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	oreq.Version = 1
	og := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	og.GroupID = "sg"
	oreq.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{og}
	oresp := request[*kmsg.DescribeShareGroupOffsetsResponse](t, ctx, p, oreq)
	if len(oresp.Groups[0].Topics) != 1 || len(oresp.Groups[0].Topics[0].Partitions) != 2 {
		t.Fatalf("describe offsets: %+v", oresp.Groups[0])
	}
	p0 := oresp.Groups[0].Topics[0].Partitions[0]
	if p0.Partition != 0 || p0.StartOffset != 4 || p0.Lag != 6 || p0.LeaderEpoch != 0 {
		t.Fatalf("partition 0: %+v, want start 4 lag 6", p0)
	}
	og.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "q", Partitions: []int32{1, 7}}, {Topic: "missing", Partitions: []int32{0}}}
	oreq.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{og}
	oresp = request[*kmsg.DescribeShareGroupOffsetsResponse](t, ctx, p, oreq)
	ts := oresp.Groups[0].Topics
	if ts[0].Partitions[0].StartOffset != 0 || ts[0].Partitions[1].StartOffset != -1 || ts[1].Partitions[0].StartOffset != -1 {
		t.Fatalf("named partitions: %+v", ts)
	}

	// Alter and delete need an empty group; DeleteGroups too.
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "sg"
	alter.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "q", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 8}, {Partition: 9, StartOffset: 0}}}}
	if ar := request[*kmsg.AlterShareGroupOffsetsResponse](t, ctx, p, alter); ar.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter with a member: %v", kerr.ErrorForCode(ar.ErrorCode))
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{"sg"}
	if dr := request[*kmsg.DeleteGroupsResponse](t, ctx, p, del); dr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a live group: %v", kerr.ErrorForCode(dr.Groups[0].ErrorCode))
	}
	if resp := m.fetch(ctx, fetchOpts{epoch: new(int32(-1))}); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	m.epoch = -1
	if resp := m.heartbeat(ctx); resp.ErrorCode != 0 {
		t.Fatalf("leave: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	ar := request[*kmsg.AlterShareGroupOffsetsResponse](t, ctx, p, alter)
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 || ar.Topics[0].Partitions[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("alter: %+v", ar)
	}
	if st := describeShareOffset(t, tb, shareKey(t, tb, "sg", 0)); st.start != 8 || st.lag != 2 {
		t.Fatalf("after alter: %+v", st)
	}
	m2 := newShareMember(t, tb, "sg", "m2")
	m2.join(ctx, "q")
	if got := offsetsOf(records(t, m2.fetch(ctx, fetchOpts{maxWait: time.Second}))); !slices.Equal(got, []int64{8, 9}) {
		t.Fatalf("after alter the group reads %v, want 8 and 9", got)
	}
	m2.fetch(ctx, fetchOpts{epoch: new(int32(-1))})
	m2.epoch = -1
	m2.heartbeat(ctx)

	dso := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	dso.GroupID = "sg"
	dso.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "q"}, {Topic: "missing"}}
	dsr := request[*kmsg.DeleteShareGroupOffsetsResponse](t, ctx, p, dso)
	if dsr.ErrorCode != 0 || dsr.Topics[0].ErrorCode != 0 || dsr.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete offsets: %+v", dsr)
	}
	if st := describeShareOffset(t, tb, shareKey(t, tb, "sg", 0)); st.start != -1 {
		t.Fatalf("after delete offsets: %+v", st)
	}
	if dr := request[*kmsg.DeleteGroupsResponse](t, ctx, p, del); dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(dr.Groups[0].ErrorCode))
	}
	lreq.TypesFilter = nil
	for _, g := range request[*kmsg.ListGroupsResponse](t, ctx, p, lreq).Groups {
		if g.Group == "sg" {
			t.Fatal("deleted share group still listed")
		}
	}
}

func TestShareGroupConfigs(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := shareClient(t, tb)
	alter := func(group string, validateOnly bool, kv ...string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		for i := 0; i+1 < len(kv); i += 2 {
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name = kv[i]
			if kv[i+1] == "<delete>" {
				cfg.Op = kmsg.IncrementalAlterConfigOpDelete
			} else {
				cfg.Value = kmsg.StringPtr(kv[i+1])
			}
			res.Configs = append(res.Configs, cfg)
		}
		req.Resources = append(req.Resources, res)
		resp := request[*kmsg.IncrementalAlterConfigsResponse](t, ctx, c, req)
		return resp.Resources[0].ErrorCode, deref(resp.Resources[0].ErrorMessage)
	}
	for _, tc := range []struct {
		kv   []string
		code int16
		msg  string
	}{
		{[]string{"share.record.lock.duration.ms", "5000"}, kerr.InvalidConfig.Code, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{[]string{"share.record.lock.duration.ms", "61000"}, kerr.InvalidConfig.Code, "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{[]string{"share.delivery.count.limit", "x"}, kerr.InvalidConfig.Code, "Invalid value x for configuration share.delivery.count.limit: Not a number of type INT"},
		{[]string{"share.auto.offset.reset", "oldest"}, kerr.InvalidConfig.Code, "Invalid value oldest for configuration share.auto.offset.reset: must be latest, earliest or by_duration:<ISO-8601 duration>"},
		{[]string{"nope", "1"}, kerr.InvalidConfig.Code, "Unknown group config name: nope"},
		{[]string{"share.auto.offset.reset", "by_duration:PT1H", "share.delivery.count.limit", "3"}, 0, ""},
	} {
		if code, msg := alter("cg", false, tc.kv...); code != tc.code || msg != tc.msg {
			t.Errorf("%v: %v %q, want %v %q", tc.kv, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
		}
	}
	if code, _ := alter("cg", true, "share.delivery.count.limit", "4"); code != 0 {
		t.Fatalf("validate only: %v", kerr.ErrorForCode(code))
	}
	describe := func(names ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.IncludeSynonyms = true
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "cg", names
		req.Resources = append(req.Resources, res)
		resp := request[*kmsg.DescribeConfigsResponse](t, ctx, c, req)
		if resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("describe: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
		}
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, e := range resp.Resources[0].Configs {
			out[e.Name] = e
		}
		return out
	}
	all := describe()
	if e := all["share.delivery.count.limit"]; deref(e.Value) != "3" || e.Source != kmsg.ConfigSourceGroupConfig || len(e.ConfigSynonyms) != 2 || e.ConfigSynonyms[1].Name != "group.share.delivery.count.limit" {
		t.Fatalf("share.delivery.count.limit: %+v (validate-only must not store 4)", e)
	}
	if e := all["share.record.lock.duration.ms"]; deref(e.Value) != "30000" || e.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("share.record.lock.duration.ms: %+v", e)
	}
	if len(all) != len(sharegroup.GroupConfigNames()) {
		t.Fatalf("%d configs described, want %d", len(all), len(sharegroup.GroupConfigNames()))
	}
	if only := describe("share.auto.offset.reset"); len(only) != 1 || deref(only["share.auto.offset.reset"].Value) != "by_duration:PT1H" {
		t.Fatalf("named describe: %+v", only)
	}

	// The configs survive a restart and apply to the group.
	if code, _ := alter("cg", false, "share.delivery.count.limit", "<delete>", "share.record.lock.duration.ms", "20000", "share.heartbeat.interval.ms", "6000"); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	dir := tb.dir
	tb.stop()
	tb2 := startBroker(t, dir, nil)
	c = shareClient(t, tb2)
	all = describe()
	if deref(all["share.delivery.count.limit"].Value) != "5" || deref(all["share.record.lock.duration.ms"].Value) != "20000" {
		t.Fatalf("after restart: %+v", all)
	}
	// A member of the group gets them: the heartbeat interval in its
	// heartbeats, the lock duration in its ShareFetch answers.
	createTopic(t, ctx, c, "q", 1, nil)
	m := newShareMember(t, tb2, "cg", "m")
	if hb := m.heartbeat(ctx, "q"); hb.ErrorCode != 0 || hb.HeartbeatIntervalMillis != 6000 {
		t.Fatalf("heartbeat after restart: %v, interval %d ms, want 6000", kerr.ErrorForCode(hb.ErrorCode), hb.HeartbeatIntervalMillis)
	}
	if resp := m.fetch(ctx, fetchOpts{}); resp.ErrorCode != 0 || resp.AcquisitionLockTimeoutMillis != 20000 {
		t.Fatalf("fetch after restart: %v, lock %d ms, want 20000", kerr.ErrorForCode(resp.ErrorCode), resp.AcquisitionLockTimeoutMillis)
	}
}

func TestShareHeartbeatErrors(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := shareClient(t, tb)
	createTopic(t, ctx, c, "q", 1, nil)
	// A consumer group holding the id.
	cg := newClient(t, tb.addr, kgo.ConsumerGroup("taken"), kgo.ConsumeTopics("q"))
	eventually(t, 10*time.Second, func() error {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		cg.PollFetches(pctx)
		req := kmsg.NewPtrListGroupsRequest()
		if len(request[*kmsg.ListGroupsResponse](t, ctx, c, req).Groups) == 0 {
			return fmt.Errorf("consumer group not there yet")
		}
		return nil
	})
	for _, tc := range []struct {
		group, member string
		epoch         int32
		topics        []string
		code          int16
	}{
		{"g", "", 0, []string{"q"}, kerr.InvalidRequest.Code},
		{"", "m", 0, []string{"q"}, kerr.InvalidRequest.Code},
		{"g", "m", 0, nil, kerr.InvalidRequest.Code},
		{"g", "m", 3, nil, kerr.GroupIDNotFound.Code},
		{"taken", "m", 0, []string{"q"}, kerr.GroupIDNotFound.Code},
		{"g", "m", 0, []string{"q"}, 0},
		{"g", "other", 2, nil, kerr.UnknownMemberID.Code},
		{"g", "m", 7, nil, kerr.FencedMemberEpoch.Code},
	} {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = tc.group, tc.member, tc.epoch, tc.topics
		resp := request[*kmsg.ShareGroupHeartbeatResponse](t, ctx, c, req)
		if resp.ErrorCode != tc.code {
			t.Errorf("%+v: %v %s", tc, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
		}
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{"g:AAAAAAAAAAAAAAAAAAAAAA:0"}
	fr := request[*kmsg.FindCoordinatorResponse](t, ctx, c, fc)
	if fr.Coordinators[0].ErrorCode != 0 || fr.Coordinators[0].NodeID != 1 {
		t.Fatalf("find share coordinator: %+v", fr.Coordinators[0])
	}
}
