package sharestate

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"weir/internal/share"
)

// TestHomeAdmit walks one key through the coordinator's fence: a
// new leader's read fences the old leader's writes, an older state epoch
// is fenced, an administrative reset starts a state epoch above the held
// one, and a deletion clears the fence.
func TestHomeAdmit(t *testing.T) {
	h := &home{fences: map[string]keyFence{}}
	key := []byte{KeyState, 'k'}
	snap := func(stateEpoch int32) []byte {
		r := share.New(share.Config{}, 0).Snapshot()
		r.StateEpoch = stateEpoch
		v, err := r.AppendTo(nil)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	write := func(stateEpoch, leaderEpoch int32) *entry {
		return &entry{key: key, value: snap(stateEpoch), fence: true, stateEpoch: stateEpoch, leaderEpoch: leaderEpoch}
	}
	read := func(leaderEpoch int32) *entry {
		return &entry{key: key, read: true, fence: true, leaderEpoch: leaderEpoch}
	}
	steps := []struct {
		name string
		e    *entry
		want error
		// after is the fence the step leaves.
		after keyFence
	}{
		{"first write", write(0, 3), nil, keyFence{0, 3, true}},
		{"same leader writes again", write(0, 3), nil, keyFence{0, 3, true}},
		{"a look fences nothing", read(-1), nil, keyFence{0, 3, true}},
		{"new leader reads", read(4), nil, keyFence{0, 4, true}},
		{"deposed leader's write", write(0, 3), kerr.FencedLeaderEpoch, keyFence{0, 4, true}},
		{"deposed leader's read", read(3), kerr.FencedLeaderEpoch, keyFence{0, 4, true}},
		{"new leader writes", write(0, 4), nil, keyFence{0, 4, true}},
		{"reset", &entry{key: key, value: snap(0), fence: true, leaderEpoch: -1, reinit: true}, nil, keyFence{1, 4, true}},
		{"leader's write of the old state epoch", write(0, 4), kerr.FencedStateEpoch, keyFence{1, 4, true}},
		{"leader writes the reset state", write(1, 4), nil, keyFence{1, 4, true}},
		{"delete", &entry{key: key, fence: true, leaderEpoch: -1}, nil, keyFence{}},
		{"a write after the delete", write(0, 2), nil, keyFence{0, 2, true}},
	}
	for _, st := range steps {
		err := h.admit(st.e)
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("%s: admit = %v, want %v", st.name, err, st.want)
		}
		if got := h.fences[string(key)]; got != st.after {
			t.Fatalf("%s: fence %+v, want %+v", st.name, got, st.after)
		}
		if st.e.reinit {
			r, err := share.DecodeStateRecord(st.e.value)
			if err != nil || r.StateEpoch != st.after.state {
				t.Fatalf("%s: the reset record has state epoch %d (%v), want %d", st.name, r.StateEpoch, err, st.after.state)
			}
		}
	}
}
