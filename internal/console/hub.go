package console

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// hub collects views while someone watches them and only then: with no
// watcher and no page being loaded, it holds no timer and sends no
// request, so an unwatched console costs the broker nothing. One
// goroutine (run) owns the store of histories and the latest views;
// collections (the I/O) run on their own goroutines, one at a time per
// view, and hand their results back to it.
type hub struct {
	col      collector
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration // the shortest time between two collections of a view
	timeout  time.Duration // one collection's bound

	reqs chan hubReq
	done chan collected
	stop chan struct{}
	wg   sync.WaitGroup // run and the collections

	// Owned by run.
	st       *store
	views    map[viewKey]*viewState
	inflight int
}

type viewState struct {
	watchers map[*watcher]struct{}
	latest   any // the last view built (nil before the first)
	err      error
	at       time.Time // when latest (or err) was collected
	took     time.Duration
	running  bool
	waiting  []chan<- snapshot // Snapshot calls waiting for the next collection
	next     time.Time         // when the next collection may start
}

// watcher receives a view's updates; the channel holds only the latest.
type watcher struct {
	key viewKey
	ch  chan snapshot
}

type snapshot struct {
	view any
	err  error
}

type collected struct {
	key  viewKey
	raw  any
	err  error
	at   time.Time
	took time.Duration
}

type hubReq struct {
	watch   *watcher      // register
	unwatch *watcher      // unregister
	snap    *viewKey      // the latest view, collecting one if none is fresh
	reply   chan snapshot // for snap
}

// History bounds: points per series (at the 2 s default interval, ten
// minutes) and series kept.
const (
	historyPoints = 300
	historySeries = 20000
)

// A view that took d to collect is not collected again before
// costFactor×d, up to maxBackoff intervals: a slow cluster is asked less
// often, and a chart still gets a point every few intervals.
const (
	costFactor = 10
	maxBackoff = 5
)

func newHub(col collector, log *slog.Logger, now func() time.Time, interval, timeout time.Duration) *hub {
	h := &hub{col: col, log: log, now: now, interval: interval, timeout: timeout,
		reqs: make(chan hubReq), done: make(chan collected), stop: make(chan struct{}),
		st: newStore(historyPoints, historySeries), views: map[viewKey]*viewState{}}
	h.wg.Add(1)
	go h.run()
	return h
}

// close stops the hub and waits for its collections.
func (h *hub) close() {
	close(h.stop)
	h.wg.Wait()
}

// Watch registers interest in a view until cancel is called: the view is
// collected every interval and each result sent on the channel (a slow
// reader misses intermediate ones).
func (h *hub) Watch(k viewKey) (<-chan snapshot, func()) {
	w := &watcher{key: k, ch: make(chan snapshot, 1)}
	select {
	case h.reqs <- hubReq{watch: w}:
	case <-h.stop:
		close(w.ch)
		return w.ch, func() {}
	}
	var once sync.Once
	return w.ch, func() {
		once.Do(func() {
			select {
			case h.reqs <- hubReq{unwatch: w}:
			case <-h.stop:
			}
		})
	}
}

// Snapshot returns the latest view of k, collected within the last
// interval, collecting it now if there is none.
func (h *hub) Snapshot(ctx context.Context, k viewKey) (any, error) {
	reply := make(chan snapshot, 1)
	select {
	case h.reqs <- hubReq{snap: &k, reply: reply}:
	case <-h.stop:
		return nil, context.Canceled
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case s := <-reply:
		return s.view, s.err
	case <-h.stop:
		return nil, context.Canceled
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *hub) run() {
	defer h.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var timer *time.Timer
	var timerC <-chan time.Time
	for {
		// Arm the timer for the earliest watched view due, or not at all.
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if due, ok := h.nextDue(); ok {
			timer = time.NewTimer(max(0, due.Sub(h.now())))
			timerC = timer.C
		}
		select {
		case <-h.stop:
			if timer != nil {
				timer.Stop()
			}
			cancel()
			// Drain the collections still running: they send on done.
			for h.inflight > 0 {
				<-h.done
				h.inflight--
			}
			return
		case r := <-h.reqs:
			h.handle(ctx, r)
		case c := <-h.done:
			h.inflight--
			h.finish(c)
		case <-timerC:
			now := h.now()
			for k, vs := range h.views {
				if len(vs.watchers) > 0 && !vs.running && !now.Before(vs.next) {
					h.start(ctx, k, vs)
				}
			}
		}
	}
}

func (h *hub) nextDue() (time.Time, bool) {
	var due time.Time
	found := false
	for _, vs := range h.views {
		if len(vs.watchers) == 0 || vs.running {
			continue
		}
		if !found || vs.next.Before(due) {
			due, found = vs.next, true
		}
	}
	return due, found
}

func (h *hub) state(k viewKey) *viewState {
	vs := h.views[k]
	if vs == nil {
		vs = &viewState{watchers: map[*watcher]struct{}{}}
		h.views[k] = vs
	}
	return vs
}

func (h *hub) handle(ctx context.Context, r hubReq) {
	switch {
	case r.watch != nil:
		vs := h.state(r.watch.key)
		vs.watchers[r.watch] = struct{}{}
		if vs.latest != nil || vs.err != nil {
			send(r.watch, snapshot{vs.latest, vs.err})
		}
	case r.unwatch != nil:
		if vs := h.views[r.unwatch.key]; vs != nil {
			delete(vs.watchers, r.unwatch)
		}
		h.prune()
	case r.snap != nil:
		vs := h.state(*r.snap)
		if (vs.latest != nil || vs.err != nil) && h.now().Sub(vs.at) < h.interval {
			r.reply <- snapshot{vs.latest, vs.err}
			return
		}
		vs.waiting = append(vs.waiting, r.reply)
		if !vs.running {
			h.start(ctx, *r.snap, vs)
		}
	}
}

// keepIdle is how long an unwatched view's latest result is kept: a page
// load followed by its event stream reuses the load's collection, and
// the stream's first collection waits out the interval after it, so rates
// are never measured over a few milliseconds.
const keepIdle = time.Minute

// prune forgets views nobody watched for keepIdle (their histories stay
// in the store, bounded).
func (h *hub) prune() {
	now := h.now()
	for k, vs := range h.views {
		if len(vs.watchers) == 0 && !vs.running && len(vs.waiting) == 0 && now.Sub(vs.at) > keepIdle {
			delete(h.views, k)
		}
	}
}

func (h *hub) start(ctx context.Context, k viewKey, vs *viewState) {
	vs.running = true
	h.inflight++
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		cctx, cancel := context.WithTimeout(ctx, h.timeout)
		defer cancel()
		began := h.now()
		raw, err := h.col.collect(cctx, k)
		h.done <- collected{key: k, raw: raw, err: err, at: h.now(), took: h.now().Sub(began)}
	}()
}

func (h *hub) finish(c collected) {
	vs := h.views[c.key]
	if vs == nil {
		return
	}
	vs.running = false
	vs.at, vs.took = c.at, c.took
	vs.next = c.at.Add(min(max(h.interval, costFactor*c.took), maxBackoff*h.interval))
	if c.err != nil {
		vs.err = c.err
		h.log.Debug("console view failed", "view", c.key.Kind, "name", c.key.Name, "err", c.err)
	} else {
		vs.latest, vs.err = build(h.st, c.key, c.raw, c.at), nil
	}
	s := snapshot{vs.latest, vs.err}
	if c.err != nil {
		s.view = nil
	}
	for w := range vs.watchers {
		send(w, s)
	}
	for _, r := range vs.waiting {
		r <- s
	}
	vs.waiting = nil
	h.prune()
}

// send replaces whatever the watcher has not read yet with s.
func send(w *watcher, s snapshot) {
	select {
	case <-w.ch:
	default:
	}
	w.ch <- s
}
