package replica

import (
	"path/filepath"
	"testing"
	"time"
)

// TestLeadersShareTheirRules checks that the leaders of an Env made by
// NewEnv read its settings from one place rather than a copy each, and
// that an Env not made by NewEnv (each replica then makes its own) still
// gets its defaults and its Eligible rule applied.
func TestLeadersShareTheirRules(t *testing.T) {
	ineligible := int32(3)
	for _, tc := range []struct {
		name   string
		env    *Env
		shared bool
	}{
		{"NewEnv", NewEnv(Env{LocalID: 1, Eligible: func(id int32, _ int64) bool { return id != ineligible }}), true},
		{"literal", &Env{LocalID: 1, Eligible: func(id int32, _ int64) bool { return id != ineligible }}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := PartitionState{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}
			var leaders []*Replica
			for i := range 2 {
				r, err := Open(openLog(t, filepath.Join(t.TempDir(), "t-0")), 0, Config{Env: tc.env, Topic: "t", Partition: int32(i)})
				if err != nil {
					t.Fatal(err)
				}
				if err := r.BecomeLeader(st); err != nil {
					t.Fatal(err)
				}
				leaders = append(leaders, r)
			}
			a, b := leaders[0].lead(), leaders[1].lead()
			if tc.shared && (a.rules != b.rules || a.rules != tc.env.rules) {
				t.Fatal("two leaders of one Env hold a copy of its rules each")
			}
			if a.rules.self != 1 || a.rules.maxLag != DefaultMaxLag {
				t.Fatalf("rules %+v: want self 1 and the default lag", *a.rules)
			}
			now := time.Now()
			for _, id := range []int32{2, 3} {
				change := a.fetched(id, 0, 0, -1, now)
				if joined := change != nil; joined != (id != ineligible) {
					t.Fatalf("follower %d caught up: ISR change %v, eligible %v", id, change, id != ineligible)
				}
				a.pending = nil
			}
		})
	}
}
