package log

import (
	"context"
	"errors"
	"testing"
)

// TestBlankReadsEmptyAndIsNeverWritten: the blank of a never-written
// log's settings reads as that log does (the empty log at 0, high
// watermark 0, no directory), every write that would give it files fails
// with errBlank, the rest leave it as it was, and Close does not close
// it, so the many partitions it stands for keep reading it.
func TestBlankReadsEmptyAndIsNeverWritten(t *testing.T) {
	env := NewEnv(Options{Now: newFakeClock().now})
	l := openLazy(t, lazyDir(t), DefaultConfig(), Options{Env: env})
	if !l.NeverWritten() {
		t.Fatal("a lazy log never written does not say so")
	}
	b := l.Blank()
	if !b.IsBlank() || b.NeverWritten() || l.IsBlank() {
		t.Fatalf("blank: IsBlank %v NeverWritten %v; the log: IsBlank %v", b.IsBlank(), b.NeverWritten(), l.IsBlank())
	}
	if b.EndOffset() != 0 || b.StartOffset() != 0 || b.Size() != 0 || b.NotedHighWatermark() != 0 || b.Dir() != "" || b.Producers() != nil {
		t.Fatalf("blank reads end %d start %d size %d hw %d dir %q", b.EndOffset(), b.StartOffset(), b.Size(), b.NotedHighWatermark(), b.Dir())
	}
	if res, err := b.Read(nil, 0, 1<<20, 0); err != nil || len(res.Ranges) != 0 {
		t.Fatalf("blank read: %v, %d ranges", err, len(res.Ranges))
	}
	batch := makeBatch(t, batchSpec{records: []testRecord{{value: []byte("v")}}})
	writes := map[string]error{}
	_, writes["Append"] = b.Append(batch, AppendOptions{})
	_, writes["AppendReplicated"] = b.AppendReplicated(batch)
	_, writes["AppendMarker"] = b.AppendMarker(TxnMarker{ProducerID: 7, Marker: Marker{Type: ControlAbort}}, AppendOptions{})
	writes["TruncateFullyAndStartAt"] = b.TruncateFullyAndStartAt(5)
	cfg := DefaultConfig()
	cfg.SegmentBytes /= 2
	writes["SetConfig"] = b.SetConfig(cfg)
	for name, err := range writes {
		if !errors.Is(err, errBlank) {
			t.Errorf("%s on the blank: %v, want errBlank", name, err)
		}
	}
	b.NoteHighWatermark(7)
	if n, err := b.EnforceRetention(10); err != nil || n != 0 {
		t.Fatalf("retention on the blank: %d, %v", n, err)
	}
	if err := b.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdvanceStartOffset(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.EndOffset() != 0 || b.NotedHighWatermark() != 0 || b.Config() != DefaultConfig() || b.live() || b.closing() {
		t.Fatalf("the blank changed: end %d hw %d live %v closing %v", b.EndOffset(), b.NotedHighWatermark(), b.live(), b.closing())
	}
	if err := b.WaitDurable(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
}

// TestBlankIsOnePerSettings: the never-written logs of one Env and
// settings share one blank; BlankFor gives the blank of other settings,
// whose Config is those settings (a config change of a never-written
// log held as a blank).
func TestBlankIsOnePerSettings(t *testing.T) {
	env := NewEnv(Options{Now: newFakeClock().now})
	a := openLazy(t, lazyDir(t), DefaultConfig(), Options{Env: env})
	b := openLazy(t, lazyDir(t), DefaultConfig(), Options{Env: env})
	if a.Blank() != b.Blank() {
		t.Fatal("two never-written logs of one Env and settings have two blanks")
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes /= 2
	other, err := a.BlankFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if other == a.Blank() || other.Config() != cfg || !other.IsBlank() {
		t.Fatalf("BlankFor: same blank %v, config %+v", other == a.Blank(), other.Config())
	}
	if again, _ := b.BlankFor(cfg); again != other {
		t.Fatal("BlankFor made a second blank for the same settings")
	}
	cfg.SegmentBytes = 0
	if _, err := a.BlankFor(cfg); err == nil {
		t.Fatal("BlankFor took an invalid config")
	}
}
