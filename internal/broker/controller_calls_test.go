package broker

import (
	"testing"

	"weir/internal/metadata"
)

// Metadata names the raft leader while it is a live broker, else the
// answering broker, which forwards: never -1, never a fenced node.
func TestControllerForClients(t *testing.T) {
	img, _, err := metadata.Empty().Apply(1, []metadata.Record{
		&metadata.RegisterBrokerRecord{ID: 1, Epoch: 1},
		&metadata.RegisterBrokerRecord{ID: 2, Epoch: 2},
		&metadata.FenceBrokerRecord{ID: 2, Epoch: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		leader, want int32
	}{
		{"a live leader", 1, 1},
		{"no leader (an election)", -1, 3},
		{"a leader fenced as dead", 2, 3},
		{"a leader not registered yet", 7, 3},
	} {
		if got := controllerForClients(img, tc.leader, 3); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
