package sharestate

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/share"
)

// FuzzRecords feeds __share_group_state keys and values to the replay's
// check: nothing may panic, and a state record it accepts decodes and,
// when it is a snapshot, restores.
func FuzzRecords(f *testing.F) {
	k, _ := RecordKey(share.StateKey{Group: "g", Partition: 3})
	snap := share.New(share.Config{}, 5).Snapshot()
	v, _ := snap.AppendTo(nil)
	f.Add(k, v)
	f.Add(k, []byte(nil))
	f.Add(append([]byte{KeyGroup}, "g"...), []byte{0})
	f.Add([]byte{9}, []byte{1, 2})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		full, err := RecordIsFull(key, value)
		if err != nil || key[0] != KeyState || value == nil {
			return
		}
		rec, err := share.DecodeStateRecord(value)
		if err != nil {
			t.Fatalf("accepted a state record that does not decode: %v", err)
		}
		if full {
			if _, err := share.Restore(share.Config{}, []share.StateRecord{rec}); err != nil {
				t.Fatalf("accepted snapshot does not restore: %v", err)
			}
		}
	})
}

// FuzzWriteShareGroupState decodes WriteShareGroupState bodies and reads
// their partitions as the coordinator does: nothing may panic, and a
// write it accepts holds a record that decodes and validates.
func FuzzWriteShareGroupState(f *testing.F) {
	r := kmsg.NewPtrWriteShareGroupStateRequest()
	r.Version, r.GroupID = 1, "g"
	snap := share.New(share.Config{}, 5).Snapshot()
	v, _ := snap.AppendTo(nil)
	key, _ := RecordKey(share.StateKey{Group: "g", Partition: 0})
	r.Topics = append(r.Topics, writeTopicOf(entry{key: key, value: v, stateEpoch: 0, leaderEpoch: 3}))
	r.Topics = append(r.Topics, writeTopicOf(entry{key: key, leaderEpoch: 3, reinit: true}))
	f.Add(r.AppendTo(nil))
	f.Add([]byte{0, 1, 'g', 1})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1
		if err := req.ReadFrom(body); err != nil {
			return
		}
		for _, rt := range req.Topics {
			for i := range rt.Partitions {
				e, err := entryOfWrite(req.GroupID, rt.TopicID, &rt.Partitions[i])
				if err != nil || e.value == nil {
					continue
				}
				rec, err := share.DecodeStateRecord(e.value)
				if err != nil {
					t.Fatalf("accepted write does not decode: %v", err)
				}
				if err := rec.Validate(); err != nil {
					t.Fatalf("accepted write does not validate: %v", err)
				}
			}
		}
	})
}
