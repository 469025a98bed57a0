package group

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareGroupRecord(t *testing.T) {
	for _, tc := range []struct {
		group  string
		exists bool
	}{{"orders", true}, {"orders", false}, {"", true}, {"ü-group", true}} {
		r := ShareGroupRecord(tc.group, tc.exists)
		g, exists, ok := ShareGroupOf(r.Key, r.Value)
		if !ok || g != tc.group || exists != tc.exists {
			t.Errorf("ShareGroupOf(ShareGroupRecord(%q, %v)) = %q, %v, %v", tc.group, tc.exists, g, exists, ok)
		}
	}
	// The group package's own records are not share groups.
	own := encodeRecord(decodedRecord{kind: recConsumerGroup, group: "g", consumer: &consumerGroupValue{epoch: 1}})
	if _, _, ok := ShareGroupOf(own.Key, own.Value); ok {
		t.Error("a consumer group record read as a share group")
	}
	if _, _, ok := ShareGroupOf([]byte{0, 10, 0}, nil); ok {
		t.Error("a truncated key read as a share group")
	}
}

// A coordinator replaying __consumer_offsets with share group records in
// it starts, and keeps them out of its own groups.
func TestReplaySkipsShareGroupRecords(t *testing.T) {
	h := newHarness(t)
	if err := h.store.Append(context.Background(), "sg", []Record{ShareGroupRecord("sg", true)}); err != nil {
		t.Fatal(err)
	}
	h.restart()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	resp, err := h.c.ListGroups(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if g.Group == "sg" {
			t.Errorf("the share group's record made a group here: %+v", g)
		}
	}
}
