package console

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A view is what one page shows live. Collecting one does the I/O (the
// admin requests and scrapes, off the hub's goroutine); building one
// turns what was collected into rows and charts, recording counters and
// gauges in the hub's store on the way (on the hub's goroutine).

// viewKey names a view: overview, topic (Name: the topic), groups, group
// (Name: the group id).
type viewKey struct {
	Kind, Name string
}

const (
	kindOverview = "overview"
	kindTopic    = "topic"
	kindGroups   = "groups"
	kindGroup    = "group"
)

// chartSpan is how far back the charts look.
const chartSpan = 5 * time.Minute

// maxGroupsScanned bounds the groups whose offsets one topic view reads.
const maxGroupsScanned = 50

// collector does a view's I/O.
type collector struct {
	cluster Cluster
	metrics Metrics
}

// errs keeps the first errors of a collection for the page to show.
type errs struct {
	mu   sync.Mutex
	list []string
}

func (e *errs) add(what string, err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.list) < 20 {
		e.list = append(e.list, what+": "+err.Error())
	}
}

func (c *collector) collect(ctx context.Context, k viewKey) (any, error) {
	switch k.Kind {
	case kindOverview:
		return c.overview(ctx)
	case kindTopic:
		return c.topic(ctx, k.Name)
	case kindGroups:
		return c.groups(ctx)
	case kindGroup:
		return c.group(ctx, k.Name)
	}
	return nil, fmt.Errorf("console: no view %q", k.Kind)
}

// scrapeAll scrapes every broker at once.
func (c *collector) scrapeAll(ctx context.Context, brokers []Broker) (map[int32]Sample, map[int32]error) {
	samples, failed := map[int32]Sample{}, map[int32]error{}
	if c.metrics == nil {
		for _, b := range brokers {
			failed[b.ID] = ErrNoMetrics
		}
		return samples, failed
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.metrics.Scrape(ctx, b.ID)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed[b.ID] = err
			} else {
				samples[b.ID] = s
			}
		}()
	}
	wg.Wait()
	return samples, failed
}

// ---- overview ----

type overviewRaw struct {
	info      ClusterInfo
	quorum    Quorum
	quorumErr error
	topics    []Topic
	samples   map[int32]Sample
	scrapeErr map[int32]error
	errs      []string
}

func (c *collector) overview(ctx context.Context) (any, error) {
	var r overviewRaw
	var e errs
	info, err := c.cluster.Describe(ctx)
	if err != nil {
		return nil, fmt.Errorf("describing the cluster: %w", err)
	}
	r.info = info
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r.quorum, r.quorumErr = c.cluster.Quorum(ctx)
	}()
	go func() {
		defer wg.Done()
		ts, err := c.cluster.Topics(ctx)
		e.add("listing topics", err)
		r.topics = ts
	}()
	r.samples, r.scrapeErr = c.scrapeAll(ctx, info.Brokers)
	wg.Wait()
	r.errs = e.list
	return &r, nil
}

// OverviewView is the overview page's live part.
type OverviewView struct {
	At         time.Time
	ClusterID  string
	Controller int32
	Brokers    []BrokerRow
	Quorum     *QuorumView
	QuorumNote string
	Topics     []TopicRow
	// UnderReplicated and Offline list partitions by name.
	UnderReplicated []PartitionRef
	Offline         []PartitionRef
	BytesChart      template.HTML
	RequestsChart   template.HTML
	Errors          []string
}

// BrokerRow is one broker on the overview.
type BrokerRow struct {
	Broker
	Controller        bool
	Rates             bool // whether the rates are known
	BytesIn, BytesOut float64
	Requests          float64
	MetricsNote       string
}

// QuorumView is the metadata quorum.
type QuorumView struct {
	Leader        int32
	Epoch         int32
	HighWatermark int64
	Replicas      []QuorumRow
}

// QuorumRow is one voter or observer: how far its log is behind the
// leader's.
type QuorumRow struct {
	ID          int32
	Voter       bool
	Leader      bool
	LogEnd, Lag int64
	CaughtUp    string
}

// TopicRow is one topic on the overview.
type TopicRow struct {
	Name                 string
	Internal             bool
	Partitions, Replicas int
	UnderReplicated      int
	Offline              int
	Err                  string
}

// PartitionRef names a partition with its replicas.
type PartitionRef struct {
	TP
	Leader        int32
	Replicas, ISR []int32
}

func buildOverview(st *store, r *overviewRaw, at time.Time) *OverviewView {
	v := &OverviewView{At: at, ClusterID: r.info.ID, Controller: r.info.Controller, Errors: r.errs}
	var inLines, outLines, reqLines []Line
	for _, b := range r.info.Brokers {
		row := BrokerRow{Broker: b, Controller: b.ID == r.info.Controller}
		pre := "b/" + strconv.Itoa(int(b.ID)) + "/"
		if s, ok := r.samples[b.ID]; ok {
			in, ok1 := st.Counter(pre+"in", at, s.BytesIn)
			out, ok2 := st.Counter(pre+"out", at, s.BytesOut)
			req, ok3 := st.Counter(pre+"req", at, s.Requests)
			row.BytesIn, row.BytesOut, row.Requests = in, out, req
			row.Rates = ok1 && ok2 && ok3
			if !row.Rates {
				row.MetricsNote = "measuring…"
			}
		} else if err := r.scrapeErr[b.ID]; err != nil {
			row.MetricsNote = metricsNote(err)
		}
		name := "broker " + strconv.Itoa(int(b.ID))
		inLines = append(inLines, Line{Name: name + " in", Points: st.Points(pre + "in")})
		outLines = append(outLines, Line{Name: name + " out", Points: st.Points(pre + "out")})
		reqLines = append(reqLines, Line{Name: name, Points: st.Points(pre + "req")})
		v.Brokers = append(v.Brokers, row)
	}
	v.BytesChart = lineChart("Bytes in and out per broker", "bytes/s", append(inLines, outLines...), at, chartSpan, rateBytes)
	v.RequestsChart = lineChart("Requests per broker", "requests/s", reqLines, at, chartSpan, rateCount)
	switch {
	case errors.Is(r.quorumErr, ErrNotServed):
		v.QuorumNote = "not shown: the brokers do not serve DescribeQuorum"
	case r.quorumErr != nil:
		v.QuorumNote = "DescribeQuorum failed: " + r.quorumErr.Error()
	default:
		q := &QuorumView{Leader: r.quorum.Leader, Epoch: r.quorum.Epoch, HighWatermark: r.quorum.HighWatermark}
		var leaderEnd int64
		for _, rep := range r.quorum.Voters {
			if rep.ID == r.quorum.Leader {
				leaderEnd = rep.LogEnd
			}
		}
		add := func(reps []QuorumReplica, voter bool) {
			for _, rep := range reps {
				row := QuorumRow{ID: rep.ID, Voter: voter, Leader: voter && rep.ID == r.quorum.Leader, LogEnd: rep.LogEnd, Lag: max(0, leaderEnd-rep.LogEnd)}
				if !rep.LastCaughtUp.IsZero() {
					row.CaughtUp = ago(at, rep.LastCaughtUp)
				}
				q.Replicas = append(q.Replicas, row)
			}
		}
		add(r.quorum.Voters, true)
		add(r.quorum.Observers, false)
		v.Quorum = q
	}
	for _, t := range r.topics {
		row := TopicRow{Name: t.Name, Internal: t.Internal, Partitions: len(t.Partitions)}
		if t.Err != nil {
			row.Err = t.Err.Error()
		}
		for _, p := range t.Partitions {
			row.Replicas = max(row.Replicas, len(p.Replicas))
			ref := PartitionRef{TP: TP{t.Name, p.ID}, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
			if p.OfflinePartition() {
				row.Offline++
				v.Offline = append(v.Offline, ref)
			} else if p.UnderReplicated() {
				row.UnderReplicated++
				v.UnderReplicated = append(v.UnderReplicated, ref)
			}
		}
		v.Topics = append(v.Topics, row)
	}
	sort.Slice(v.Topics, func(i, j int) bool {
		if v.Topics[i].Internal != v.Topics[j].Internal {
			return !v.Topics[i].Internal
		}
		return v.Topics[i].Name < v.Topics[j].Name
	})
	return v
}

func metricsNote(err error) string {
	if errors.Is(err, ErrNoMetrics) {
		return "no metrics endpoint known"
	}
	return "metrics: " + err.Error()
}

func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Millisecond).String() + " ago"
}

// ---- topic ----

type topicRaw struct {
	name      string
	topic     *Topic
	start     map[int32]int64
	end       map[int32]int64
	sizes     map[int32]map[TP]int64 // broker -> replica sizes
	committed map[string]map[int32]int64
	shares    map[string]map[int32]ShareOffset
	errs      []string
}

func (c *collector) topic(ctx context.Context, name string) (any, error) {
	r := &topicRaw{name: name, sizes: map[int32]map[TP]int64{}, committed: map[string]map[int32]int64{}, shares: map[string]map[int32]ShareOffset{}}
	var e errs
	ts, err := c.cluster.Topics(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("describing %s: %w", name, err)
	}
	for i := range ts {
		if ts[i].Name == name && ts[i].Err == nil {
			r.topic = &ts[i]
		}
	}
	if r.topic == nil {
		return r, nil
	}
	var parts []TP
	for _, p := range r.topic.Partitions {
		parts = append(parts, TP{name, p.ID})
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	run := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	for _, spec := range []int64{OffsetEarliest, OffsetLatest} {
		run(func() {
			s, err := c.cluster.Offsets(ctx, name, spec)
			mu.Lock()
			defer mu.Unlock()
			if spec == OffsetEarliest {
				e.add("log start offsets", err)
				r.start = s
			} else {
				e.add("log end offsets", err)
				r.end = s
			}
		})
	}
	info, err := c.cluster.Describe(ctx)
	e.add("describing the cluster", err)
	for _, b := range info.Brokers {
		if b.Fenced {
			continue
		}
		run(func() {
			s, err := c.cluster.LogDirs(ctx, b.ID, parts)
			e.add("log dirs of broker "+strconv.Itoa(int(b.ID)), err)
			if err == nil {
				mu.Lock()
				r.sizes[b.ID] = s
				mu.Unlock()
			}
		})
	}
	groups, err := c.cluster.Groups(ctx)
	e.add("listing groups", err)
	if len(groups) > maxGroupsScanned {
		groups = groups[:maxGroupsScanned]
	}
	for _, g := range groups {
		run(func() {
			if g.Type == GroupShare {
				so, err := c.cluster.ShareOffsets(ctx, g.ID)
				if err != nil {
					e.add("share offsets of "+g.ID, err)
					return
				}
				m := map[int32]ShareOffset{}
				for tp, o := range so {
					if tp.Topic == name {
						m[tp.Partition] = o
					}
				}
				if len(m) > 0 {
					mu.Lock()
					r.shares[g.ID] = m
					mu.Unlock()
				}
				return
			}
			co, err := c.cluster.Committed(ctx, g.ID)
			if err != nil {
				e.add("offsets of "+g.ID, err)
				return
			}
			m := map[int32]int64{}
			for tp, o := range co {
				if tp.Topic == name {
					m[tp.Partition] = o
				}
			}
			if len(m) > 0 {
				mu.Lock()
				r.committed[g.ID] = m
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r.errs = e.list
	return r, nil
}

// TopicView is the topic page's live part.
type TopicView struct {
	At                         time.Time
	Name                       string
	Exists                     bool
	ID                         string
	Internal                   bool
	Partitions                 []PartitionRow
	TotalSize                  int64
	ProduceRate, ProduceBytes  float64
	ConsumeRate                float64
	BytesPerBroker             template.HTML
	ProduceChart, ConsumeChart template.HTML
	Backlogs                   []Backlog
	Errors                     []string
}

// PartitionRow is one partition of a topic.
type PartitionRow struct {
	ID                       int32
	Leader                   int32
	Replicas, ISR, Offline   []int32
	UnderReplicated          bool
	OfflinePartition         bool
	Start, End               int64 // -1: unknown
	Size                     int64 // the leader's replica; -1: unknown
	ProduceRate, ProduceByte float64
	ConsumeRate              float64
}

// Backlog is one group's lag on a topic, per partition.
type Backlog struct {
	Group string
	Type  string
	Total int64
	Chart template.HTML
}

func buildTopic(st *store, r *topicRaw, at time.Time) *TopicView {
	v := &TopicView{At: at, Name: r.name, Errors: r.errs}
	if r.topic == nil {
		return v
	}
	t := r.topic
	v.Exists, v.Internal, v.ID = true, t.Internal, hex.EncodeToString(t.ID[:])
	pre := "t/" + r.name + "/"
	perBroker := map[int32]int64{}
	for b, sizes := range r.sizes {
		for tp, s := range sizes {
			if tp.Topic == r.name {
				perBroker[b] += s
			}
		}
	}
	// Consumption per group and partition, from committed offsets.
	consume := map[int32]float64{}
	for g, offs := range r.committed {
		for p, o := range offs {
			if rate, ok := st.Counter(pre+"g/"+g+"/"+strconv.Itoa(int(p)), at, float64(o)); ok {
				consume[p] += rate
			}
		}
	}
	var produceLines, consumeLines []Line
	for _, p := range t.Partitions {
		row := PartitionRow{ID: p.ID, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR, Offline: p.Offline,
			UnderReplicated: p.UnderReplicated() && !p.OfflinePartition(), OfflinePartition: p.OfflinePartition(), Start: -1, End: -1, Size: -1}
		ps := strconv.Itoa(int(p.ID))
		if o, ok := r.start[p.ID]; ok {
			row.Start = o
		}
		if o, ok := r.end[p.ID]; ok {
			row.End = o
			row.ProduceRate, _ = st.Counter(pre+"p/"+ps+"/end", at, float64(o))
		}
		if s, ok := r.sizes[p.Leader][TP{r.name, p.ID}]; ok {
			row.Size = s
			v.TotalSize += s
			row.ProduceByte, _ = st.Counter(pre+"p/"+ps+"/size", at, float64(s))
		}
		row.ConsumeRate = consume[p.ID]
		st.Gauge(pre+"p/"+ps+"/consume", at, row.ConsumeRate)
		v.ProduceRate += row.ProduceRate
		v.ProduceBytes += row.ProduceByte
		v.ConsumeRate += row.ConsumeRate
		produceLines = append(produceLines, Line{Name: "p" + ps, Points: st.Points(pre + "p/" + ps + "/end")})
		consumeLines = append(consumeLines, Line{Name: "p" + ps, Points: st.Points(pre + "p/" + ps + "/consume")})
		v.Partitions = append(v.Partitions, row)
	}
	v.ProduceChart = lineChart("Produced records per partition", "records/s", produceLines, at, chartSpan, rateCount)
	v.ConsumeChart = lineChart("Consumed (committed) records per partition", "records/s", consumeLines, at, chartSpan, rateCount)
	var brokers []int32
	for b := range perBroker {
		brokers = append(brokers, b)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	var bars []Bar
	for _, b := range brokers {
		bars = append(bars, Bar{Label: "broker " + strconv.Itoa(int(b)), Value: float64(perBroker[b])})
	}
	v.BytesPerBroker = barChart("Bytes on disk per broker (all replicas of this topic)", bars, humanBytes)
	backlog := func(g, typ string, lag map[int32]int64) {
		bl := Backlog{Group: g, Type: typ}
		var bars []Bar
		for _, p := range t.Partitions {
			l, ok := lag[p.ID]
			if !ok {
				continue
			}
			bl.Total += l
			bars = append(bars, Bar{Label: "p" + strconv.Itoa(int(p.ID)), Value: float64(l)})
		}
		bl.Chart = barChart("Backlog per partition of "+g, bars, humanCount)
		v.Backlogs = append(v.Backlogs, bl)
	}
	for _, g := range sortedKeys(r.committed) {
		lag := map[int32]int64{}
		for p, o := range r.committed[g] {
			if end, ok := r.end[p]; ok {
				lag[p] = max(0, end-o)
			}
		}
		backlog(g, "consumer", lag)
	}
	for _, g := range sortedKeys(r.shares) {
		lag := map[int32]int64{}
		for p, o := range r.shares[g] {
			if o.Lag >= 0 {
				lag[p] = o.Lag
			}
		}
		backlog(g, "share", lag)
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- groups ----

type groupsRaw struct {
	groups  []GroupListing
	members map[string]int
	errs    []string
}

// maxGroupsDescribed bounds the groups the groups page describes.
const maxGroupsDescribed = 200

func (c *collector) groups(ctx context.Context) (any, error) {
	gs, err := c.cluster.Groups(ctx)
	if err != nil && len(gs) == 0 {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	var e errs
	e.add("listing groups", err)
	r := &groupsRaw{groups: gs, members: map[string]int{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, g := range gs {
		if i == maxGroupsDescribed {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := c.cluster.DescribeGroup(ctx, g)
			e.add("describing "+g.ID, err)
			if err == nil {
				mu.Lock()
				r.members[g.ID] = len(d.Members)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r.errs = e.list
	return r, nil
}

// GroupsView is the groups page's live part.
type GroupsView struct {
	At     time.Time
	Groups []GroupRow
	Errors []string
}

// GroupRow is one group in the list.
type GroupRow struct {
	GroupListing
	Members int // -1: unknown
}

func buildGroups(r *groupsRaw, at time.Time) *GroupsView {
	v := &GroupsView{At: at, Errors: r.errs}
	for _, g := range r.groups {
		n, ok := r.members[g.ID]
		if !ok {
			n = -1
		}
		v.Groups = append(v.Groups, GroupRow{GroupListing: g, Members: n})
	}
	sort.Slice(v.Groups, func(i, j int) bool { return v.Groups[i].ID < v.Groups[j].ID })
	return v
}

// ---- group ----

type groupRaw struct {
	id        string
	found     bool
	detail    GroupDetail
	committed map[TP]int64
	shares    map[TP]ShareOffset
	end       map[TP]int64
	leaders   map[TP]int32
	samples   map[int32]Sample
	errs      []string
}

func (c *collector) group(ctx context.Context, id string) (any, error) {
	r := &groupRaw{id: id, end: map[TP]int64{}, leaders: map[TP]int32{}}
	var e errs
	gs, err := c.cluster.Groups(ctx)
	if err != nil && len(gs) == 0 {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	e.add("listing groups", err)
	var listing GroupListing
	for _, g := range gs {
		if g.ID == id {
			listing, r.found = g, true
		}
	}
	if !r.found {
		r.errs = e.list
		return r, nil
	}
	d, err := c.cluster.DescribeGroup(ctx, listing)
	e.add("describing the group", err)
	if err != nil {
		d = GroupDetail{GroupListing: listing}
	}
	r.detail = d
	topics := map[string]bool{}
	if listing.Type == GroupShare {
		r.shares, err = c.cluster.ShareOffsets(ctx, id)
		e.add("share offsets", err)
		for tp := range r.shares {
			topics[tp.Topic] = true
		}
	} else {
		r.committed, err = c.cluster.Committed(ctx, id)
		e.add("committed offsets", err)
		for tp := range r.committed {
			topics[tp.Topic] = true
		}
	}
	for _, m := range d.Members {
		for _, tp := range m.Assigned {
			topics[tp.Topic] = true
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	if len(names) > 0 {
		ts, err := c.cluster.Topics(ctx, names...)
		e.add("describing topics", err)
		for _, t := range ts {
			for _, p := range t.Partitions {
				r.leaders[TP{t.Name, p.ID}] = p.Leader
			}
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offs, err := c.cluster.Offsets(ctx, t, OffsetLatest)
			e.add("end offsets of "+t, err)
			mu.Lock()
			defer mu.Unlock()
			for p, o := range offs {
				r.end[TP{t, p}] = o
			}
		}()
	}
	if listing.Type == GroupShare {
		info, err := c.cluster.Describe(ctx)
		e.add("describing the cluster", err)
		var failed map[int32]error
		r.samples, failed = c.scrapeAll(ctx, info.Brokers)
		for b, err := range failed {
			e.add("metrics of broker "+strconv.Itoa(int(b)), err)
		}
	}
	wg.Wait()
	r.errs = e.list
	return r, nil
}

// GroupView is a group page's live part.
type GroupView struct {
	At         time.Time
	ID         string
	Exists     bool
	Detail     GroupDetail
	Share      bool
	Members    []MemberRow
	Partitions []GroupPartitionRow
	TotalLag   int64
	LagChart   template.HTML
	Backlog    template.HTML
	Waits      []WaitRow
	WaitChart  template.HTML
	Errors     []string
}

// MemberRow is one member with its assignment written out.
type MemberRow struct {
	Member
	Assignment, Target string
}

// GroupPartitionRow is one partition the group consumes.
type GroupPartitionRow struct {
	TP
	Leader    int32
	Owner     string // the member (client id) assigned it
	Committed int64  // classic/consumer: the committed offset; share: the start offset
	End       int64
	Lag       int64 // -1: unknown
	Rate      float64
	// Share partitions, from the leader's metrics.
	Share                         bool
	InFlight, Acquired, Available float64
	Archived, Redeliveries        float64 // totals
	RedeliveryRate, ArchiveRate   float64
	Expiries                      float64
}

// WaitRow is one broker's ShareFetch waits over the last interval.
type WaitRow struct {
	Broker      int32
	Known       bool
	ParkedRate  float64 // share fetches that found nothing and waited, per second
	EmptyRate   float64 // of those, ending empty at MaxWaitMs
	MeanWaitMs  float64
	ParkedTotal float64
}

func buildGroup(st *store, r *groupRaw, at time.Time) *GroupView {
	v := &GroupView{At: at, ID: r.id, Exists: r.found, Errors: r.errs}
	if !r.found {
		return v
	}
	v.Detail = r.detail
	v.Share = r.detail.Type == GroupShare
	owner := map[TP]string{}
	for _, m := range r.detail.Members {
		v.Members = append(v.Members, MemberRow{Member: m, Assignment: tpList(m.Assigned), Target: tpList(m.Target)})
		name := m.ClientID
		if name == "" {
			name = m.ID
		}
		for _, tp := range m.Assigned {
			if owner[tp] != "" {
				owner[tp] += ", "
			}
			owner[tp] += name
		}
	}
	pre := "g/" + r.id + "/"
	tps := map[TP]bool{}
	for tp := range r.committed {
		tps[tp] = true
	}
	for tp := range r.shares {
		tps[tp] = true
	}
	for tp := range owner {
		tps[tp] = true
	}
	keys := make([]TP, 0, len(tps))
	for tp := range tps {
		keys = append(keys, tp)
	}
	sortTPs(keys)
	shareStats := map[TP]ShareSample{}
	for _, s := range r.samples {
		for k, ss := range s.Shares {
			if k.Group == r.id {
				shareStats[k.TP] = ss
			}
		}
	}
	var lagLines []Line
	var bars []Bar
	for _, tp := range keys {
		row := GroupPartitionRow{TP: tp, Leader: -1, Owner: owner[tp], Committed: -1, End: -1, Lag: -1, Share: v.Share}
		if l, ok := r.leaders[tp]; ok {
			row.Leader = l
		}
		if e, ok := r.end[tp]; ok {
			row.End = e
		}
		tpKey := tp.Topic + "/" + strconv.Itoa(int(tp.Partition))
		if v.Share {
			if so, ok := r.shares[tp]; ok {
				row.Committed, row.Lag = so.StartOffset, so.Lag
				if row.Lag < 0 && row.End >= 0 && so.StartOffset >= 0 {
					// A broker without v1's lag: what lies past the start
					// offset (in-flight records included).
					row.Lag = max(0, row.End-so.StartOffset)
				}
			}
			if ss, ok := shareStats[tp]; ok {
				row.InFlight, row.Acquired, row.Available = ss.InFlight, ss.Acquired, ss.Available
				row.Archived, row.Redeliveries, row.Expiries = ss.Archived, ss.Redeliveries, ss.Expiries
				row.RedeliveryRate, _ = st.Counter(pre+"redeliv/"+tpKey, at, ss.Redeliveries)
				row.ArchiveRate, _ = st.Counter(pre+"arch/"+tpKey, at, ss.Archived)
				row.Rate, _ = st.Counter(pre+"acked/"+tpKey, at, ss.Acknowledged)
			}
		} else if c, ok := r.committed[tp]; ok {
			row.Committed = c
			if row.End >= 0 {
				row.Lag = max(0, row.End-c)
			}
			row.Rate, _ = st.Counter(pre+"commit/"+tpKey, at, float64(c))
		}
		name := tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
		if row.Lag >= 0 {
			v.TotalLag += row.Lag
			st.Gauge(pre+"lag/"+tpKey, at, float64(row.Lag))
			bars = append(bars, Bar{Label: name, Value: float64(row.Lag)})
		}
		lagLines = append(lagLines, Line{Name: name, Points: st.Points(pre + "lag/" + tpKey)})
		v.Partitions = append(v.Partitions, row)
	}
	v.LagChart = lineChart("Lag per partition", "records", lagLines, at, chartSpan, humanCount)
	v.Backlog = barChart("Backlog per partition now", bars, humanCount)
	if v.Share {
		var waitLines []Line
		brokers := make([]int32, 0, len(r.samples))
		for b := range r.samples {
			brokers = append(brokers, b)
		}
		sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
		for _, b := range brokers {
			s := r.samples[b]
			bp := "b/" + strconv.Itoa(int(b)) + "/share/"
			parked, ok1 := st.Counter(bp+"parked", at, s.Parked)
			empty, ok2 := st.Counter(bp+"empty", at, s.ParkedEmpty)
			secs, ok3 := st.Counter(bp+"secs", at, s.ParkedSeconds)
			w := WaitRow{Broker: b, Known: ok1 && ok2 && ok3, ParkedRate: parked, EmptyRate: empty, ParkedTotal: s.Parked}
			if w.Known && parked > 0 {
				w.MeanWaitMs = secs / parked * 1000
			}
			if w.Known {
				st.Gauge(bp+"meanwait", at, w.MeanWaitMs)
			}
			waitLines = append(waitLines, Line{Name: "broker " + strconv.Itoa(int(b)), Points: st.Points(bp + "meanwait")})
			v.Waits = append(v.Waits, w)
		}
		v.WaitChart = lineChart("Mean ShareFetch wait per broker (fetches that found nothing)", "ms", waitLines, at, chartSpan,
			func(x float64) string { return humanCount(x) + " ms" })
	}
	return v
}

func tpList(tps []TP) string {
	var b strings.Builder
	last := ""
	for _, tp := range tps {
		if tp.Topic != last {
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(tp.Topic + ": ")
			last = tp.Topic
		} else {
			b.WriteString(",")
		}
		b.WriteString(strconv.Itoa(int(tp.Partition)))
	}
	return b.String()
}

func build(st *store, k viewKey, raw any, at time.Time) any {
	switch r := raw.(type) {
	case *overviewRaw:
		return buildOverview(st, r, at)
	case *topicRaw:
		return buildTopic(st, r, at)
	case *groupsRaw:
		return buildGroups(r, at)
	case *groupRaw:
		return buildGroup(st, r, at)
	}
	return nil
}
