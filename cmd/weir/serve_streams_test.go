package main

import (
	"strings"
	"testing"
	"time"

	"weir/internal/config"
)

// The group.streams.* broker properties reach the streams group
// coordinator's settings.
func TestBrokerConfigStreamsGroups(t *testing.T) {
	s, err := config.NewBroker(map[string]string{
		config.GroupStreamsSession:   "12000",
		config.GroupStreamsHeartbeat: "1500",
		config.GroupStreamsStandbys:  "2",
		config.GroupStreamsMaxSize:   "7",
		config.NodeID:                "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := brokerConfig(s).Group.Streams
	if got.SessionTimeout != 12*time.Second || got.HeartbeatInterval != 1500*time.Millisecond || got.NumStandbyReplicas != 2 || got.MaxSize != 7 {
		t.Fatalf("streams settings %+v", got)
	}
	def, err := config.NewBroker(map[string]string{config.NodeID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := brokerConfig(def).Group.Streams; got.SessionTimeout != 45*time.Second || got.HeartbeatInterval != 5*time.Second || got.NumStandbyReplicas != 0 {
		t.Fatalf("default streams settings %+v", got)
	}
}

// group.max.size and the group.consumer.* broker properties reach the
// group coordinator's settings.
func TestBrokerConfigConsumerGroups(t *testing.T) {
	s, err := config.NewBroker(map[string]string{
		config.GroupMaxSize:           "9",
		config.GroupConsumerSession:   "20000",
		config.GroupConsumerHeartbeat: "2500",
		config.NodeID:                 "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	g := brokerConfig(s).Group
	if g.MaxGroupSize != 9 || g.ConsumerSessionTimeout != 20*time.Second || g.ConsumerHeartbeatInterval != 2500*time.Millisecond {
		t.Fatalf("group settings: max %d, session %v, heartbeat %v", g.MaxGroupSize, g.ConsumerSessionTimeout, g.ConsumerHeartbeatInterval)
	}
	def, err := config.NewBroker(map[string]string{config.NodeID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if g := brokerConfig(def).Group; g.ConsumerSessionTimeout != 45*time.Second || g.ConsumerHeartbeatInterval != 5*time.Second {
		t.Fatalf("default consumer group settings: session %v, heartbeat %v", g.ConsumerSessionTimeout, g.ConsumerHeartbeatInterval)
	}
}

// A heartbeat interval not below its session timeout is refused, as
// Kafka refuses it, for consumer and streams groups.
func TestGroupHeartbeatBelowSession(t *testing.T) {
	for _, kv := range []map[string]string{
		{config.GroupConsumerHeartbeat: "45000"},
		{config.GroupStreamsHeartbeat: "60000", config.GroupStreamsSession: "30000"},
	} {
		kv[config.NodeID] = "1"
		if _, err := config.NewBroker(kv); err == nil || !strings.Contains(err.Error(), "must be less than") {
			t.Errorf("%v: %v, want a heartbeat-below-session error", kv, err)
		}
	}
}
