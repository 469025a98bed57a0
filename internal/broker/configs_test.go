package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTopicConfigsDescribeAlterAndPersist(t *testing.T) {
	dir := t.TempDir()
	tb := startBroker(t, dir, nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	adm := kadm.NewClient(c)
	ms := "60000"
	createTopic(t, ctx, c, "cfg", 1, map[string]*string{"retention.ms": &ms})

	rc, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]kadm.Config{}
	for _, cfg := range rc[0].Configs {
		got[cfg.Key] = cfg
	}
	if v := got["retention.ms"]; v.MaybeValue() != "60000" || v.Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms described as %+v", v)
	}
	if v := got["segment.bytes"]; v.MaybeValue() != "1073741824" || v.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("segment.bytes described as %+v", v)
	}
	if got := partitionAt(tb.b, "cfg", 0).log().Config().RetentionTime; got != time.Minute {
		t.Fatalf("log retention %v, want 1m from the topic override", got)
	}

	// Incremental changes apply to the running log at once.
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "message.timestamp.type", Value: kmsg.StringPtr("LogAppendTime")}, {Op: kadm.DeleteConfig, Name: "retention.ms"}}
	ar, err := adm.AlterTopicConfigs(ctx, alter, "cfg")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("alter: %v %v", err, ar)
	}
	lc := partitionAt(tb.b, "cfg", 0).log().Config()
	if !lc.LogAppendTime || lc.RetentionTime != 7*24*time.Hour {
		t.Fatalf("log config after alter: append time %v retention %v", lc.LogAppendTime, lc.RetentionTime)
	}

	bad := []struct {
		name string
		cfg  kadm.AlterConfig
		want error
	}{
		{"unknown key", kadm.AlterConfig{Name: "no.such.config", Value: kmsg.StringPtr("1")}, kerr.InvalidConfig},
		{"not a number", kadm.AlterConfig{Name: "retention.ms", Value: kmsg.StringPtr("soon")}, kerr.InvalidConfig},
		{"below minimum", kadm.AlterConfig{Name: "segment.bytes", Value: kmsg.StringPtr("10")}, kerr.InvalidConfig},
	}
	for _, tc := range bad {
		ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{tc.cfg}, "cfg")
		if err != nil {
			t.Fatal(err)
		}
		if ar[0].Err != tc.want || ar[0].ErrMessage == "" {
			t.Errorf("%s: %v %q, want %v with a message", tc.name, ar[0].Err, ar[0].ErrMessage, tc.want)
		}
	}
	if ar, _ := adm.AlterTopicConfigs(ctx, alter, "missing"); ar[0].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("alter of a missing topic: %v", ar[0].Err)
	}

	// Broker defaults change the topics that do not override them.
	br, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.retention.ms", Value: kmsg.StringPtr("120000")}}, 1)
	if err != nil || br[0].Err != nil {
		t.Fatalf("alter broker: %v %+v", err, br)
	}
	if got := partitionAt(tb.b, "cfg", 0).log().Config().RetentionTime; got != 2*time.Minute {
		t.Fatalf("retention after broker default change: %v", got)
	}
	if br, _ := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "node.id", Value: kmsg.StringPtr("7")}}, 1); br[0].Err != kerr.InvalidRequest {
		t.Fatalf("read-only broker config: %v", br[0].Err)
	}

	// Everything survives a restart.
	c.Close()
	tb.stop()
	tb = startBroker(t, dir, nil)
	lc = partitionAt(tb.b, "cfg", 0).log().Config()
	if !lc.LogAppendTime || lc.RetentionTime != 2*time.Minute {
		t.Fatalf("after restart: append time %v retention %v", lc.LogAppendTime, lc.RetentionTime)
	}
}

func TestFaultInjectionDelaysProduce(t *testing.T) {
	tb := startBroker(t, t.TempDir(), nil)
	ctx := testCtx(t)
	c := newClient(t, tb.addr)
	adm := kadm.NewClient(c)
	createTopic(t, ctx, c, "slow", 1, nil)
	timeProduce := func() time.Duration {
		start := time.Now()
		produceValues(t, ctx, c, "slow", time.Now(), "x")
		return time.Since(start)
	}
	timeProduce() // warm the connection
	set := func(v string) {
		r, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "weir.fault.produce.response.delay.ms", Value: kmsg.StringPtr(v)}}, 1)
		if err != nil || r[0].Err != nil {
			t.Fatalf("set delay: %v %+v", err, r)
		}
	}
	set("300")
	if d := timeProduce(); d < 300*time.Millisecond {
		t.Fatalf("produce answered in %v with a 300 ms injected delay", d)
	}
	set("0")
	if d := timeProduce(); d >= 300*time.Millisecond {
		t.Fatalf("produce still slow (%v) after the delay was removed", d)
	}
}
