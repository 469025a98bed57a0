package wiretag

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The backlog survives a response's encoding; a client that does not
// know the tag decodes the response all the same.
func TestShareFetchBacklogRoundTrip(t *testing.T) {
	entries := []PartitionBacklog{{TopicID: [16]byte{1, 2}, Partition: 0, Records: 12_458_820}, {TopicID: [16]byte{9}, Partition: 11, Records: 0}, {Partition: -1, Records: 1}}
	resp := kmsg.NewPtrShareFetchResponse()
	resp.Version = 2
	SetShareFetchBacklog(&resp.UnknownTags, entries)
	var back kmsg.ShareFetchResponse
	back.Version = 2
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ShareFetchBacklogOf(&back.UnknownTags)
	if err != nil || !ok || len(got) != len(entries) {
		t.Fatalf("decoded %v %v %v", got, ok, err)
	}
	for i := range entries {
		if got[i] != entries[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got[i], entries[i])
		}
	}
	var none kmsg.Tags
	if _, ok, err := ShareFetchBacklogOf(&none); ok || err != nil {
		t.Fatal("an absent tag decoded")
	}
	req := kmsg.NewPtrShareFetchRequest()
	if HasShareFetchBacklogWanted(&req.UnknownTags) {
		t.Fatal("wanted without the tag")
	}
	SetShareFetchBacklogWanted(&req.UnknownTags)
	if !HasShareFetchBacklogWanted(&req.UnknownTags) || HasShareFetchAllLeaders(&req.UnknownTags) {
		t.Fatal("the two request tags mixed up")
	}
}

func TestShareFetchBacklogBroken(t *testing.T) {
	good := func() []byte {
		var tg kmsg.Tags
		SetShareFetchBacklog(&tg, []PartitionBacklog{{Partition: 3, Records: 7}})
		var v []byte
		tg.Each(func(_ uint32, b []byte) { v = b })
		return v
	}()
	for name, v := range map[string][]byte{
		"cut":        good[:len(good)-1],
		"trailing":   append(append([]byte{}, good...), 0),
		"huge count": {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"no count":   {1},
	} {
		var tg kmsg.Tags
		tg.Set(ShareFetchBacklog, v)
		if _, ok, err := ShareFetchBacklogOf(&tg); !ok || err == nil {
			t.Errorf("%s: ok %v err %v, want a decoding error", name, ok, err)
		}
	}
	var other kmsg.Tags
	other.Set(ShareFetchBacklog, []byte{2, 0})
	if _, ok, err := ShareFetchBacklogOf(&other); ok || err != nil {
		t.Error("another version decoded")
	}
}

func FuzzShareFetchBacklogOf(f *testing.F) {
	var tg kmsg.Tags
	SetShareFetchBacklog(&tg, []PartitionBacklog{{TopicID: [16]byte{5}, Partition: 2, Records: 99}})
	tg.Each(func(_ uint32, b []byte) { f.Add(b) })
	f.Add([]byte{1, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, v []byte) {
		var in kmsg.Tags
		in.Set(ShareFetchBacklog, v)
		entries, ok, err := ShareFetchBacklogOf(&in)
		if !ok || err != nil {
			return
		}
		// What decodes encodes to a value that decodes the same (varints
		// may come overlong; the encoding is the shortest).
		var out kmsg.Tags
		SetShareFetchBacklog(&out, entries)
		back, ok, err := ShareFetchBacklogOf(&out)
		if !ok || err != nil || len(back) != len(entries) {
			t.Fatalf("%x decoded to %v, which does not decode again: %v %v", v, entries, ok, err)
		}
		for i := range back {
			if back[i] != entries[i] {
				t.Fatalf("%x: entry %d %+v came back as %+v", v, i, entries[i], back[i])
			}
		}
	})
}

// The controller offset survives a response's round trip, is removed by
// Take with other tags kept, and reads as absent when malformed; the
// request's ask is recognised only with its version byte.
func TestControllerOffset(t *testing.T) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	if AsksControllerOffset(&req.UnknownTags) {
		t.Fatal("a fresh request asks")
	}
	AskControllerOffset(&req.UnknownTags)
	var backReq kmsg.IncrementalAlterConfigsRequest
	backReq.Version = 1
	if err := backReq.ReadFrom(req.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if !AsksControllerOffset(&backReq.UnknownTags) {
		t.Fatal("the ask did not survive a round trip")
	}
	var other kmsg.Tags
	other.Set(ControllerOffset, []byte{2})
	if AsksControllerOffset(&other) {
		t.Fatal("another version byte asks")
	}

	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.Version = 1
	SetControllerOffset(&resp.UnknownTags, 1<<40+7)
	resp.UnknownTags.Set(ControllerOffset+1, []byte("x"))
	var back kmsg.IncrementalAlterConfigsResponse
	back.Version = 1
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	off, ok := TakeControllerOffset(&back.UnknownTags)
	if !ok || off != 1<<40+7 {
		t.Fatalf("took %d %v", off, ok)
	}
	if back.UnknownTags.Len() != 1 {
		t.Fatalf("%d tags left, want the other one", back.UnknownTags.Len())
	}
	if _, ok := TakeControllerOffset(&back.UnknownTags); ok {
		t.Fatal("taken twice")
	}
	var bad kmsg.Tags
	bad.Set(ControllerOffset, []byte{1, 2, 3})
	if _, ok := TakeControllerOffset(&bad); ok {
		t.Fatal("a short value read as an offset")
	}
}

// The ShareFetch request tags survive encoding and decoding a ShareFetch,
// together or alone, and each is read on its own: setting one never reads
// as another, and other values or tags do not count.
func TestShareFetchRequestTags(t *testing.T) {
	type flags struct{ allLeaders, backlog, deferAcks bool }
	cases := []struct {
		name string
		set  func(*kmsg.Tags)
		want flags
	}{
		{"none", func(*kmsg.Tags) {}, flags{}},
		{"defer only", SetShareFetchDeferAcks, flags{deferAcks: true}},
		{"all three", func(tg *kmsg.Tags) {
			SetShareFetchAllLeaders(tg)
			SetShareFetchBacklogWanted(tg)
			SetShareFetchDeferAcks(tg)
		}, flags{true, true, true}},
		{"the other two", func(tg *kmsg.Tags) {
			SetShareFetchAllLeaders(tg)
			SetShareFetchBacklogWanted(tg)
		}, flags{allLeaders: true, backlog: true}},
		{"all leaders only", SetShareFetchAllLeaders, flags{allLeaders: true}},
		{"all leaders, another value", func(tg *kmsg.Tags) { tg.Set(ShareFetchAllLeaders, []byte{2}) }, flags{}},
		{"all leaders, empty value", func(tg *kmsg.Tags) { tg.Set(ShareFetchAllLeaders, nil) }, flags{}},
		{"backlog wanted only", SetShareFetchBacklogWanted, flags{backlog: true}},
		{"another tag", func(tg *kmsg.Tags) { tg.Set(ShareFetchDeferAcks+1, []byte{1}) }, flags{}},
		{"defer, another value", func(tg *kmsg.Tags) { tg.Set(ShareFetchDeferAcks, []byte{2}) }, flags{}},
		{"defer, empty value", func(tg *kmsg.Tags) { tg.Set(ShareFetchDeferAcks, nil) }, flags{}},
		{"defer, longer value", func(tg *kmsg.Tags) { tg.Set(ShareFetchDeferAcks, []byte{1, 0}) }, flags{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrShareFetchRequest()
			req.Version = 2
			tc.set(&req.UnknownTags)
			var back kmsg.ShareFetchRequest
			back.Version = 2
			if err := back.ReadFrom(req.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			got := flags{HasShareFetchAllLeaders(&back.UnknownTags), HasShareFetchBacklogWanted(&back.UnknownTags), HasShareFetchDeferAcks(&back.UnknownTags)}
			if got != tc.want {
				t.Fatalf("after a round trip: %+v, want %+v", got, tc.want)
			}
		})
	}
}
