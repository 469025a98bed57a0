package scenario

import (
	"context"
	"testing"
	"time"

	"weir/client"
)

// A topic created in steps ends with every partition it asked for; one
// at or under the step, or with an explicit assignment, is created
// whole. Growing past a step the topic already reached (a retry after a
// timeout) is not an error.
func TestCreateInSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a weir broker")
	}
	adm, err := client.NewAdmin(map[string]string{"bootstrap.servers": startBroker(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name        string
		parts, step int32
		assignment  [][]int32
		want        int
	}{
		{"steps", 23, 5, nil, 23},
		{"exact multiple", 20, 5, nil, 20},
		{"under the step", 4, 5, nil, 4},
		{"no step", 12, 0, nil, 12},
		{"assignment", -1, 1, [][]int32{{1}, {1}, {1}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := client.TopicSpec{Name: "steps-" + t.Name()[len("TestCreateInSteps/"):], Partitions: tc.parts, ReplicationFactor: 1, Assignment: tc.assignment}
			if tc.assignment != nil {
				ts.ReplicationFactor = -1
			}
			if err := createInSteps(ctx, adm, ts, tc.step); err != nil {
				t.Fatal(err)
			}
			ds, err := adm.DescribeTopics(ctx, ts.Name)
			if err != nil || len(ds) != 1 {
				t.Fatalf("describe: %v %+v", err, ds)
			}
			if got := len(ds[0].Partitions); got != tc.want {
				t.Fatalf("%d partitions, want %d", got, tc.want)
			}
		})
	}
	// The failover's probe: created, and created again (an attempt the
	// controller accepted after the client gave up on it) is created.
	for i := range 2 {
		if err := createProbe(ctx, adm, "probe"); err != nil {
			t.Fatalf("probe %d: %v", i+1, err)
		}
	}
	// Created again (a setup retried after a timeout): the topic exists
	// with every partition, and growing it to what it has is refused,
	// which a step takes as done.
	again := client.TopicSpec{Name: "steps-again", Partitions: 10, ReplicationFactor: 1}
	for i := range 2 {
		if err := createInSteps(ctx, adm, again, 5); err != nil {
			t.Fatalf("create %d: %v", i+1, err)
		}
	}
}
