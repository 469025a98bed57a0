package main

import (
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
