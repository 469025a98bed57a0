package console

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestHubIdleSendsNothing: no page open, no request to the cluster and
// no scrape; a watcher starts collection, and when it leaves collection
// stops.
func TestHubIdleSendsNothing(t *testing.T) {
	f := newFake()
	m := &fakeMetrics{}
	c, _ := newTestConsole(t, f, m)
	idle := time.After(200 * time.Millisecond) // ten intervals
	<-idle
	if n, s := f.requests.Load(), m.scrapes.Load(); n != 0 || s != 0 {
		t.Fatalf("idle console sent %d requests and %d scrapes", n, s)
	}
	ch, cancel := c.hub.Watch(viewKey{Kind: kindOverview})
	for range 3 { // three collections, an interval apart
		select {
		case s := <-ch:
			if s.err != nil || s.view == nil {
				t.Fatalf("update: %+v", s)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no update while watched")
		}
	}
	cancel()
	// A collection may be running when the watcher leaves; after it, none.
	var settled int64
	eventually(t, 5*time.Second, "collections to stop", func() bool {
		before := f.requests.Load()
		time.Sleep(100 * time.Millisecond) // five intervals
		settled = f.requests.Load()
		return settled == before
	})
	if m.scrapes.Load() == 0 {
		t.Fatal("a watched overview scraped no broker")
	}
}

// TestHubSnapshotReusesAFreshView: a page load within an interval of the
// last collection does not collect again; a failure is reported.
func TestHubSnapshotReusesAFreshView(t *testing.T) {
	f := newFake()
	c, err := New(Config{Cluster: f, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	k := viewKey{Kind: kindGroups}
	if _, err := c.hub.Snapshot(ctx, k); err != nil {
		t.Fatal(err)
	}
	n := f.requests.Load()
	if _, err := c.hub.Snapshot(ctx, k); err != nil {
		t.Fatal(err)
	}
	if f.requests.Load() != n {
		t.Fatal("a second page load within the interval collected again")
	}
	f.failAll = errors.New("broker down")
	if _, err := c.hub.Snapshot(ctx, viewKey{Kind: kindOverview}); err == nil {
		t.Fatal("a failed collection reported no error")
	}
}
