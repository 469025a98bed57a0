package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/feature"
	"weir/internal/streamsgroup"
)

// TestStreamsGroupHeartbeat runs a streams group through a broker: the
// first heartbeat reports the missing repartition and changelog topics,
// the broker creates them (with the topology's configs), and the tasks
// are assigned once they exist; StreamsGroupDescribe and ListGroups show
// the group; with streams.version 0 the heartbeat is refused.
func TestStreamsGroupHeartbeat(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	createTopic(t, ctx, c, "words", 3, nil)

	heartbeat := func(epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "wc", "member-1", epoch
		req.RebalanceTimeoutMillis = -1
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if epoch == 0 {
			req.RebalanceTimeoutMillis = 30000
			req.ProcessID = kmsg.StringPtr("process-1")
			top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
			s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"words"}, []string{"wc-repartition"}
			s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
			s1.SubtopologyID = "1"
			rt := kmsg.NewTopicInfo()
			rt.Topic = "wc-repartition"
			s1.RepartitionSourceTopics = []kmsg.TopicInfo{rt}
			ct := kmsg.NewTopicInfo()
			ct.Topic = "wc-changelog"
			ct.Configs = []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}
			s1.StateChangelogTopics = []kmsg.TopicInfo{ct}
			top.Subtopologies = append(top.Subtopologies, s0, s1)
			req.Topology = &top
		}
		return request[*kmsg.StreamsGroupHeartbeatResponse](t, ctx, c, req)
	}
	resp := heartbeat(0)
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Status) != 1 || resp.Status[0].StatusCode != streamsgroup.StatusMissingInternalTopics {
		t.Fatalf("status %+v", resp.Status)
	}
	epoch := resp.MemberEpoch
	tasks := 0
	eventually(t, 10*time.Second, func() error {
		resp := heartbeat(epoch)
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		epoch = resp.MemberEpoch
		if len(resp.Status) > 0 {
			return fmt.Errorf("status %+v", resp.Status)
		}
		if resp.ActiveTasks != nil {
			tasks = 0
			for _, ts := range resp.ActiveTasks {
				tasks += len(ts.Partitions)
			}
		}
		if tasks != 6 {
			return fmt.Errorf("%d tasks", tasks)
		}
		return nil
	})
	for _, name := range []string{"wc-repartition", "wc-changelog"} {
		tp := tb.b.lookupTopic(name)
		if tp == nil || len(tp.partitions) != 3 {
			t.Fatalf("%s not created with 3 partitions", name)
		}
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeTopic, "wc-changelog", []string{"cleanup.policy"}
	dc.Resources = append(dc.Resources, dr)
	cfg := request[*kmsg.DescribeConfigsResponse](t, ctx, c, dc)
	if len(cfg.Resources) != 1 || len(cfg.Resources[0].Configs) != 1 || deref(cfg.Resources[0].Configs[0].Value) != "compact" {
		t.Fatalf("changelog configs %+v", cfg.Resources)
	}

	dreq := kmsg.NewPtrStreamsGroupDescribeRequest()
	dreq.Groups = []string{"wc"}
	d := request[*kmsg.StreamsGroupDescribeResponse](t, ctx, c, dreq)
	if len(d.Groups) != 1 || d.Groups[0].ErrorCode != 0 || d.Groups[0].State != streamsgroup.StateStable || len(d.Groups[0].Members) != 1 {
		t.Fatalf("describe %+v", d.Groups)
	}
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"streams"}
	l := request[*kmsg.ListGroupsResponse](t, ctx, c, lreq)
	if len(l.Groups) != 1 || l.Groups[0].Group != "wc" || l.Groups[0].GroupType != "streams" {
		t.Fatalf("listed %+v", l.Groups)
	}

	up := kmsg.NewPtrUpdateFeaturesRequest()
	up.Version = 2
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = feature.StreamsVersion, 0, feature.SafeDowngrade
	up.FeatureUpdates = append(up.FeatureUpdates, u)
	if r := request[*kmsg.UpdateFeaturesResponse](t, ctx, c, up); r.ErrorCode != 0 {
		t.Fatalf("streams.version 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	eventually(t, 10*time.Second, func() error {
		if code := heartbeat(epoch).ErrorCode; code != kerr.UnsupportedVersion.Code {
			return fmt.Errorf("heartbeat with streams.version 0: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
}

// With the authorizer on, a streams group's internal topics are created
// only with CREATE on all of them (on the cluster or on each topic): a
// member that may read the group and describe the topics but not create
// them all is told which it may not create, and none is created; with
// CREATE on the cluster, both are.
func TestStreamsGroupInternalTopicsNeedCreate(t *testing.T) {
	tb := startAuthorizedBroker(t, nil)
	ctx := testCtx(t)
	adm := kadm.NewClient(newClient(t, tb.addr, kgo.ClientID("admin")))
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	acls := kadm.NewACLs().Allow("User:app").Groups("app").Operations(kadm.OpRead).
		Topics("in", "app-store-changelog", "app-rep-repartition").ResourcePatternType(kadm.ACLPatternLiteral)
	if res, err := adm.CreateACLs(ctx, acls); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	describe := kadm.NewACLs().Allow("User:app").Topics("in", "app-store-changelog", "app-rep-repartition").Operations(kadm.OpDescribe)
	if res, err := adm.CreateACLs(ctx, describe); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	app := newClient(t, tb.addr, kgo.ClientID("app"))
	join := func() *kmsg.StreamsGroupHeartbeatResponse {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "app", "m1", 30000
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s0.SubtopologyID, s0.SourceTopics, s0.RepartitionSinkTopics = "0", []string{"in"}, []string{"app-rep-repartition"}
		s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s1.SubtopologyID = "1"
		rt, ct := kmsg.NewTopicInfo(), kmsg.NewTopicInfo()
		rt.Topic, ct.Topic = "app-rep-repartition", "app-store-changelog"
		s1.RepartitionSourceTopics, s1.StateChangelogTopics = []kmsg.TopicInfo{rt}, []kmsg.TopicInfo{ct}
		top.Subtopologies = append(top.Subtopologies, s0, s1)
		req.Topology = &top
		return request[*kmsg.StreamsGroupHeartbeatResponse](t, ctx, app, req)
	}
	resp := join()
	if resp.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	details := ""
	for _, s := range resp.Status {
		details += s.StatusDetail + "|"
	}
	if want := "Unauthorized to CREATE on topics app-rep-repartition, app-store-changelog."; !strings.Contains(details, want) {
		t.Fatalf("status %q, want %q", details, want)
	}
	// CREATE on one of the two holds both back.
	one := kadm.NewACLs().Allow("User:app").Topics("app-store-changelog").Operations(kadm.OpCreate)
	if res, err := adm.CreateACLs(ctx, one); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	resp = join()
	details = ""
	for _, s := range resp.Status {
		details += s.StatusDetail + "|"
	}
	if want := "Unauthorized to CREATE on topics app-rep-repartition."; !strings.Contains(details, want) {
		t.Fatalf("status %q, want %q", details, want)
	}
	if tb.b.lookupTopic("app-store-changelog") != nil {
		t.Fatal("app-store-changelog created while app-rep-repartition may not be")
	}
	all := kadm.NewACLs().Allow("User:app").Clusters().Operations(kadm.OpCreate)
	if res, err := adm.CreateACLs(ctx, all); err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %+v", err, res)
	}
	eventually(t, 10*time.Second, func() error {
		join()
		for _, name := range []string{"app-store-changelog", "app-rep-repartition"} {
			if tb.b.lookupTopic(name) == nil {
				return fmt.Errorf("%s not created", name)
			}
		}
		return nil
	})
}
