package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

func (c *Console) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		http.ServeFileFS(w, r, static, "favicon.svg")
	})
	m.HandleFunc("GET /{$}", c.page(kindOverview))
	m.HandleFunc("GET /topic", c.page(kindTopic))
	m.HandleFunc("GET /groups", c.page(kindGroups))
	m.HandleFunc("GET /group", c.page(kindGroup))
	m.HandleFunc("GET /ops", c.opsPage)
	m.HandleFunc("GET /events", c.events)
	m.HandleFunc("GET /api/view", c.apiView)
	m.HandleFunc("GET /records", c.records)
	m.HandleFunc("POST /api/produce", c.action(c.produce))
	m.HandleFunc("POST /api/topics/create", c.action(c.createTopic))
	m.HandleFunc("POST /api/topics/delete", c.action(c.deleteTopic))
	m.HandleFunc("POST /api/configs/alter", c.action(c.alterConfig))
	m.HandleFunc("POST /api/groups/reset", c.action(c.resetOffsets))
	m.HandleFunc("POST /api/elect", c.action(c.elect))
	m.HandleFunc("POST /api/reassign", c.action(c.reassign))
	c.mux = m
}

// viewKeyOf reads which view a request is about (view and name/id
// parameters, or the page's own kind).
func viewKeyOf(q url.Values, kind string) (viewKey, error) {
	p := params{q}
	if kind == "" {
		var err error
		if kind, err = p.oneOf("view", kindOverview, kindTopic, kindGroups, kindGroup); err != nil {
			return viewKey{}, err
		}
	}
	switch kind {
	case kindTopic:
		name, err := p.topic("name")
		return viewKey{kindTopic, name}, err
	case kindGroup:
		id, err := p.group("id")
		return viewKey{kindGroup, id}, err
	}
	return viewKey{Kind: kind}, nil
}

// pageData is what every page template gets.
type pageData struct {
	Title  string
	Nav    string
	Key    viewKey
	Stream string // the event stream URL of the live part
	View   any
	Err    string
	Extra  any
	User   string // the logged-in user, when the console requires a login
}

func (k viewKey) stream() string {
	q := url.Values{"view": {k.Kind}}
	switch k.Kind {
	case kindTopic:
		q.Set("name", k.Name)
	case kindGroup:
		q.Set("id", k.Name)
	}
	return "/events?" + q.Encode()
}

// TopicExtra is what a topic page shows beside its live part: configs,
// read once per load.
type TopicExtra struct {
	Configs   []TopicConfig
	ConfigErr string
}

func (c *Console) page(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		k, err := viewKeyOf(r.URL.Query(), kind)
		if err != nil {
			c.render(w, r, http.StatusBadRequest, "error", pageData{Title: "Bad request", Err: err.Error()})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
		defer cancel()
		v, err := c.hubFor(ctx).Snapshot(ctx, k)
		d := pageData{Key: k, Stream: k.stream(), View: v, Nav: k.Kind}
		if err != nil {
			d.Err = err.Error()
		}
		switch k.Kind {
		case kindOverview:
			d.Title = "Overview"
		case kindTopic:
			d.Title, d.Nav = "Topic "+k.Name, kindOverview
			var x TopicExtra
			cfgs, err := c.clusterFor(ctx).Configs(ctx, k.Name)
			if err != nil {
				x.ConfigErr = err.Error()
			}
			x.Configs = cfgs
			d.Extra = x
		case kindGroups:
			d.Title = "Groups"
		case kindGroup:
			d.Title, d.Nav = "Group "+k.Name, kindGroups
		}
		status := http.StatusOK
		if v == nil && err != nil {
			status = http.StatusBadGateway
		}
		c.render(w, r, status, k.Kind, d)
	}
}

// OpsView is the operations page.
type OpsView struct {
	Topics          []string
	Groups          []GroupListing
	Reassignments   []Reassignment
	ReassignmentErr string
}

func (c *Console) opsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
	defer cancel()
	var v OpsView
	var errs []string
	if ts, err := c.clusterFor(ctx).Topics(ctx); err != nil {
		errs = append(errs, "listing topics: "+err.Error())
	} else {
		for _, t := range ts {
			v.Topics = append(v.Topics, t.Name)
		}
	}
	if gs, err := c.clusterFor(ctx).Groups(ctx); err != nil {
		errs = append(errs, "listing groups: "+err.Error())
	} else {
		v.Groups = gs
	}
	if rs, err := c.clusterFor(ctx).Reassignments(ctx); err != nil {
		v.ReassignmentErr = err.Error()
	} else {
		v.Reassignments = rs
	}
	c.render(w, r, http.StatusOK, "ops", pageData{Title: "Operations", Nav: "ops", View: v, Err: strings.Join(errs, "; ")})
}

func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	if sp, ok := r.Context().Value(spaceKey{}).(*space); ok {
		d.User = sp.user
	}
	t := c.tmpl[name]
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", d); err != nil {
		c.cfg.Logger.Warn("console: rendering a page", "page", name, "err", err)
		http.Error(w, "weir console: rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// renderLive renders a view's live part alone.
func (c *Console) renderLive(k viewKey, v any) (string, error) {
	var buf bytes.Buffer
	err := c.tmpl[k.Kind].ExecuteTemplate(&buf, "live", pageData{Key: k, View: v})
	return buf.String(), err
}

// events streams a view's live part as server-sent events while the
// page is open; the stream is what keeps the view collected.
func (c *Console) events(w http.ResponseWriter, r *http.Request) {
	k, err := viewKeyOf(r.URL.Query(), "")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 3000\n\n")
	fl.Flush()
	ch, cancel := c.hubFor(r.Context()).Watch(k)
	defer cancel()
	for {
		select {
		case <-r.Context().Done():
			return
		case s, ok := <-ch:
			if !ok {
				return
			}
			msg := map[string]string{}
			if s.err != nil {
				msg["error"] = s.err.Error()
			}
			if s.view != nil {
				html, err := c.renderLive(k, s.view)
				if err != nil {
					msg["error"] = "rendering: " + err.Error()
				} else {
					msg["html"] = html
				}
			}
			b, _ := json.Marshal(msg)
			if _, err := fmt.Fprintf(w, "event: live\ndata: %s\n\n", b); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// apiView answers a view as JSON (charts left out).
func (c *Console) apiView(w http.ResponseWriter, r *http.Request) {
	k, err := viewKeyOf(r.URL.Query(), "")
	if err != nil {
		writeJSON(w, http.StatusBadRequest, result{Message: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
	defer cancel()
	v, err := c.hubFor(ctx).Snapshot(ctx, k)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, result{Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// result is an action's answer.
type result struct {
	OK      bool     `json:"ok"`
	Message string   `json:"message"`
	Details []string `json:"details,omitempty"`
	// Preview lists offsets a reset would set (dry run).
	Preview []OffsetChange `json:"preview,omitempty"`
}

// OffsetChange is one partition of an offset reset.
type OffsetChange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"` // -1: none committed
	To        int64  `json:"to"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.Encode(v)
}

// maxForm bounds an action's body.
const maxForm = 2 << 20

// action wraps a state-changing handler: it must come from the
// console's own script (a header a cross-site form cannot set), its form
// is parsed within bounds, and bad parameters answer 400 with the
// parameter's message; cluster errors answer 502 with Kafka's.
func (c *Console) action(f func(ctx context.Context, p params) (result, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Weir-Console") != "1" {
			writeJSON(w, http.StatusForbidden, result{Message: "actions are taken from the console's pages (missing X-Weir-Console header)"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			writeJSON(w, http.StatusBadRequest, result{Message: "reading the form: " + err.Error()})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
		defer cancel()
		res, err := f(ctx, params{r.PostForm})
		var pe *ParamError
		switch {
		case errors.As(err, &pe):
			writeJSON(w, http.StatusBadRequest, result{Message: err.Error()})
		case err != nil:
			writeJSON(w, http.StatusBadGateway, result{Message: err.Error(), Details: res.Details})
		default:
			res.OK = true
			writeJSON(w, http.StatusOK, res)
		}
	}
}

func (c *Console) produce(ctx context.Context, p params) (result, error) {
	topic, err := p.topic("topic")
	if err != nil {
		return result{}, err
	}
	part, err := p.integer("partition", -1, 1<<31-1, ptr(-1))
	if err != nil {
		return result{}, err
	}
	key, keyNull, err := p.text("key", maxRecordBytes)
	if err != nil {
		return result{}, err
	}
	value, valueNull, err := p.text("value", maxRecordBytes)
	if err != nil {
		return result{}, err
	}
	hs, err := p.lines("headers", maxHeaders)
	if err != nil {
		return result{}, err
	}
	rec := ProduceRecord{Topic: topic, Partition: int32(part)}
	if !keyNull && len(key) > 0 {
		rec.Key = key
	}
	if !valueNull {
		rec.Value = value
		if rec.Value == nil {
			rec.Value = []byte{}
		}
	}
	for _, h := range hs {
		rec.Headers = append(rec.Headers, Header{Key: h[0], Value: []byte(h[1])})
	}
	gotPart, off, err := c.clusterFor(ctx).Produce(ctx, rec)
	if err != nil {
		return result{}, fmt.Errorf("producing to %s: %w", topic, err)
	}
	return result{Message: fmt.Sprintf("produced to %s partition %d at offset %d", topic, gotPart, off)}, nil
}

func (c *Console) createTopic(ctx context.Context, p params) (result, error) {
	name, err := p.topic("name")
	if err != nil {
		return result{}, err
	}
	parts, err := p.integer("partitions", -1, 100000, ptr(-1))
	if err != nil {
		return result{}, err
	}
	if parts == 0 {
		return result{}, bad("partitions", "0", "a topic has at least one partition (or -1 for the broker's default)")
	}
	rf, err := p.integer("replication_factor", -1, 32767, ptr(-1))
	if err != nil {
		return result{}, err
	}
	if rf == 0 {
		return result{}, bad("replication_factor", "0", "at least one replica (or -1 for the broker's default)")
	}
	cfgs, err := p.lines("configs", maxConfigEntries)
	if err != nil {
		return result{}, err
	}
	spec := TopicSpec{Name: name, Partitions: int32(parts), ReplicationFactor: int16(rf), Configs: map[string]string{}}
	for _, kv := range cfgs {
		if err := configName("configs", kv[0]); err != nil {
			return result{}, err
		}
		spec.Configs[kv[0]] = kv[1]
	}
	if err := c.clusterFor(ctx).CreateTopic(ctx, spec); err != nil {
		return result{}, err
	}
	return result{Message: "created topic " + name}, nil
}

func (c *Console) deleteTopic(ctx context.Context, p params) (result, error) {
	name, err := p.topic("name")
	if err != nil {
		return result{}, err
	}
	if p.raw("confirm") != name {
		return result{}, bad("confirm", p.raw("confirm"), "type the topic's name to confirm deleting it")
	}
	if err := c.clusterFor(ctx).DeleteTopic(ctx, name); err != nil {
		return result{}, err
	}
	return result{Message: "deleted topic " + name}, nil
}

func (c *Console) alterConfig(ctx context.Context, p params) (result, error) {
	topic, err := p.topic("topic")
	if err != nil {
		return result{}, err
	}
	name := p.raw("name")
	if err := configName("name", name); err != nil {
		return result{}, err
	}
	op, err := p.oneOf("op", "set", "delete")
	if err != nil {
		return result{}, err
	}
	var value *string
	if op == "set" {
		v := p.v.Get("value")
		if len(v) > 1<<16 {
			return result{}, bad("value", "", "at most 65536 bytes")
		}
		value = &v
	}
	if err := c.clusterFor(ctx).AlterConfig(ctx, topic, name, value); err != nil {
		return result{}, err
	}
	if value == nil {
		return result{Message: fmt.Sprintf("%s: %s back to its default", topic, name)}, nil
	}
	return result{Message: fmt.Sprintf("%s: %s=%s", topic, name, *value)}, nil
}

// resetOffsets moves a group's committed (or share start) offsets of one
// topic: a dry run answers the plan, the real one needs confirm=<group>.
func (c *Console) resetOffsets(ctx context.Context, p params) (result, error) {
	group, err := p.group("group")
	if err != nil {
		return result{}, err
	}
	topic, err := p.topic("topic")
	if err != nil {
		return result{}, err
	}
	parts, err := p.ints("partitions", 0, 1<<31-1, maxListItems)
	if err != nil {
		return result{}, err
	}
	target, err := p.resetTarget()
	if err != nil {
		return result{}, err
	}
	dry := p.raw("dry_run") == "1" || p.raw("dry_run") == "true"
	if !dry && p.v.Get("confirm") != group {
		return result{}, bad("confirm", p.raw("confirm"), "type the group's id to confirm moving its offsets")
	}
	gs, err := c.clusterFor(ctx).Groups(ctx)
	if err != nil && len(gs) == 0 {
		return result{}, err
	}
	listing := GroupListing{ID: group, Type: GroupClassic}
	for _, g := range gs {
		if g.ID == group {
			listing = g
		}
	}
	share := listing.Type == GroupShare
	current := map[TP]int64{}
	if share {
		so, err := c.clusterFor(ctx).ShareOffsets(ctx, group)
		if err != nil {
			return result{}, fmt.Errorf("reading the group's offsets: %w", err)
		}
		for tp, o := range so {
			current[tp] = o.StartOffset
		}
	} else {
		if current, err = c.clusterFor(ctx).Committed(ctx, group); err != nil {
			return result{}, fmt.Errorf("reading the group's offsets: %w", err)
		}
	}
	start, err := c.clusterFor(ctx).Offsets(ctx, topic, OffsetEarliest)
	if err != nil {
		return result{}, err
	}
	end, err := c.clusterFor(ctx).Offsets(ctx, topic, OffsetLatest)
	if err != nil {
		return result{}, err
	}
	var at map[int32]int64
	if target.Kind == "timestamp" {
		if at, err = c.clusterFor(ctx).Offsets(ctx, topic, target.Value); err != nil {
			return result{}, err
		}
	}
	if len(parts) == 0 {
		for p := range end {
			parts = append(parts, p)
		}
		sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	}
	plan := map[TP]int64{}
	var res result
	for _, part := range parts {
		tp := TP{topic, part}
		lo, ok1 := start[part]
		hi, ok2 := end[part]
		if !ok1 || !ok2 {
			return result{}, bad("partitions", strconv.Itoa(int(part)), "%s has no partition %d with a known leader", topic, part)
		}
		from, had := current[tp]
		if !had {
			from = -1
		}
		var to int64
		switch target.Kind {
		case "earliest":
			to = lo
		case "latest":
			to = hi
		case "offset":
			to = target.Value
		case "shift":
			base := from
			if !had {
				base = hi
			}
			to = base + target.Value
		case "timestamp":
			to = hi // no record at or after the time: the end
			if o, ok := at[part]; ok && o >= 0 {
				to = o
			}
		}
		to = min(max(to, lo), hi) // as kafka-consumer-groups clamps
		plan[tp] = to
		res.Preview = append(res.Preview, OffsetChange{Topic: topic, Partition: part, From: from, To: to})
	}
	if dry {
		res.Message = fmt.Sprintf("dry run: %d partitions of %s would move (nothing changed)", len(plan), topic)
		return res, nil
	}
	if share {
		err = c.clusterFor(ctx).AlterShareOffsets(ctx, group, plan)
	} else {
		err = c.clusterFor(ctx).CommitOffsets(ctx, group, plan)
	}
	if err != nil {
		return result{Details: []string{"a group with members refuses offsets from outside: stop its consumers first"}}, fmt.Errorf("moving %s's offsets: %w", group, err)
	}
	res.Message = fmt.Sprintf("moved %s's offsets on %d partitions of %s", group, len(plan), topic)
	return res, nil
}

func (c *Console) elect(ctx context.Context, p params) (result, error) {
	var parts []TP
	if p.raw("topic") != "" {
		topic, err := p.topic("topic")
		if err != nil {
			return result{}, err
		}
		ps, err := p.ints("partitions", 0, 1<<31-1, maxListItems)
		if err != nil {
			return result{}, err
		}
		if len(ps) == 0 {
			ts, err := c.clusterFor(ctx).Topics(ctx, topic)
			if err != nil {
				return result{}, err
			}
			for _, t := range ts {
				if t.Err != nil {
					return result{}, fmt.Errorf("%s: %w", topic, t.Err)
				}
				for _, pp := range t.Partitions {
					ps = append(ps, pp.ID)
				}
			}
		}
		for _, pp := range ps {
			parts = append(parts, TP{topic, pp})
		}
	} else if p.raw("partitions") != "" {
		return result{}, bad("partitions", p.raw("partitions"), "name the topic the partitions belong to")
	}
	out, err := c.clusterFor(ctx).ElectPreferred(ctx, parts)
	if err != nil {
		return result{}, err
	}
	return summarize("preferred leader election", out), nil
}

func (c *Console) reassign(ctx context.Context, p params) (result, error) {
	topic, err := p.topic("topic")
	if err != nil {
		return result{}, err
	}
	moves, err := p.moves("moves")
	if err != nil {
		return result{}, err
	}
	if p.raw("confirm") != topic {
		return result{}, bad("confirm", p.raw("confirm"), "type the topic's name to confirm moving its replicas")
	}
	m := map[TP][]int32{}
	for part, reps := range moves {
		m[TP{topic, part}] = reps
	}
	out, err := c.clusterFor(ctx).Reassign(ctx, m)
	if err != nil {
		return result{}, err
	}
	return summarize("reassignment", out), nil
}

// summarize turns per-partition outcomes into a result, failing if any
// partition failed (ELECTION_NOT_NEEDED is not a failure).
func summarize(what string, out map[TP]error) result {
	tps := make([]TP, 0, len(out))
	for tp := range out {
		tps = append(tps, tp)
	}
	sortTPs(tps)
	var res result
	failed := 0
	for _, tp := range tps {
		err := out[tp]
		switch {
		case err == nil:
			res.Details = append(res.Details, fmt.Sprintf("%s-%d: done", tp.Topic, tp.Partition))
		case strings.Contains(err.Error(), "ELECTION_NOT_NEEDED"):
			res.Details = append(res.Details, fmt.Sprintf("%s-%d: the preferred leader leads already", tp.Topic, tp.Partition))
		default:
			failed++
			res.Details = append(res.Details, fmt.Sprintf("%s-%d: %v", tp.Topic, tp.Partition, err))
		}
	}
	res.Message = fmt.Sprintf("%s: %d partitions, %d failed", what, len(tps), failed)
	return res
}

// RecordsView is a page of browsed records.
type RecordsView struct {
	Topic     string
	Partition int32
	From      int64
	Format    string
	Records   []ShownRecord
	Next      int64 // the offset after the last record shown; -1: none
	Note      string
}

// ShownRecord is one record as printed.
type ShownRecord struct {
	Offset    int64
	Timestamp time.Time
	Key       Shown
	Value     Shown
	Headers   []ShownHeader
}

// ShownHeader is one header as printed.
type ShownHeader struct {
	Key   string
	Value Shown
}

// records answers a page of records of one partition, from an offset or
// the first record at or after a time, as an HTML fragment (or JSON with
// accept=json).
func (c *Console) records(w http.ResponseWriter, r *http.Request) {
	p := params{r.URL.Query()}
	asJSON := p.raw("accept") == "json"
	fail := func(status int, err error) {
		if asJSON {
			writeJSON(w, status, result{Message: err.Error()})
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		template.Must(template.New("e").Parse(`<p class="error" role="alert">{{.}}</p>`)).Execute(w, err.Error())
	}
	v, err := c.browse(r.Context(), p)
	var pe *ParamError
	switch {
	case errors.As(err, &pe):
		fail(http.StatusBadRequest, err)
		return
	case err != nil:
		fail(http.StatusBadGateway, err)
		return
	}
	if asJSON {
		writeJSON(w, http.StatusOK, v)
		return
	}
	var buf bytes.Buffer
	if err := c.tmpl[kindTopic].ExecuteTemplate(&buf, "records", v); err != nil {
		fail(http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

func (c *Console) browse(ctx context.Context, p params) (*RecordsView, error) {
	topic, err := p.topic("topic")
	if err != nil {
		return nil, err
	}
	part, err := p.integer("partition", 0, 1<<31-1, ptr(0))
	if err != nil {
		return nil, err
	}
	limit, err := p.integer("limit", 1, maxBrowse, ptr(20))
	if err != nil {
		return nil, err
	}
	format, err := p.oneOf("format", "auto", "text", "json", "hex")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	v := &RecordsView{Topic: topic, Partition: int32(part), Format: format, Next: -1}
	switch {
	case p.raw("timestamp") != "" && p.raw("offset") != "":
		return nil, bad("timestamp", p.raw("timestamp"), "give an offset or a time, not both")
	case p.raw("timestamp") != "":
		ts, err := p.timestamp("timestamp")
		if err != nil {
			return nil, err
		}
		offs, err := c.clusterFor(ctx).Offsets(ctx, topic, ts)
		if err != nil {
			return nil, err
		}
		o, ok := offs[int32(part)]
		if !ok || o < 0 {
			v.Note = "no record at or after that time"
			return v, nil
		}
		v.From = o
	default:
		from, err := p.integer("offset", -1, 1<<62, ptr(-1))
		if err != nil {
			return nil, err
		}
		if from < 0 { // the first retained record
			starts, err := c.clusterFor(ctx).Offsets(ctx, topic, OffsetEarliest)
			if err != nil {
				return nil, err
			}
			o, ok := starts[int32(part)]
			if !ok {
				return nil, bad("partition", strconv.Itoa(int(part)), "%s has no partition %d (or its leader is not available)", topic, part)
			}
			from = o
		}
		v.From = from
	}
	recs, err := c.clusterFor(ctx).Records(ctx, RecordQuery{Topic: topic, Partition: int32(part), Offset: v.From, Limit: int(limit)})
	if err != nil && len(recs) == 0 {
		return nil, err
	}
	for _, rec := range recs {
		sr := ShownRecord{Offset: rec.Offset, Timestamp: rec.Timestamp,
			Key: show(rec.Key, rec.Key == nil, format), Value: show(rec.Value, rec.Value == nil, format)}
		for _, h := range rec.Headers {
			sr.Headers = append(sr.Headers, ShownHeader{Key: h.Key, Value: show(h.Value, h.Value == nil, format)})
		}
		v.Records = append(v.Records, sr)
		v.Next = rec.Offset + 1
	}
	if len(recs) == 0 {
		v.Note = "no records from that offset (the end of the partition?)"
	}
	return v, nil
}
