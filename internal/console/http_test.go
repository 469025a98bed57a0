package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

func eventually(t *testing.T, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newTestConsole(t *testing.T, f *fakeCluster, m Metrics) (*Console, *httptest.Server) {
	t.Helper()
	c, err := New(Config{Cluster: f, Metrics: m, Interval: 20 * time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(func() { srv.Close(); c.Close() })
	return c, srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, srv *httptest.Server, path string, form url.Values) (int, result) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Weir-Console", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r result
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s answered no JSON: %v", path, err)
	}
	return resp.StatusCode, r
}

func mustContain(t *testing.T, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("page lacks %q", p)
		}
	}
}

func TestOverviewPage(t *testing.T) {
	f := newFake()
	f.addTopic("__consumer_offsets", 2)
	_, srv := newTestConsole(t, f, nil)
	code, body := get(t, srv, "/")
	if code != http.StatusOK {
		t.Fatalf("status %d\n%s", code, body)
	}
	mustContain(t, body,
		`<tr data-broker="1">`, `<tr data-broker="3">`, "r1", "<strong>controller</strong>", "✗ fenced", "✓ active",
		"no metrics endpoint known",                     // no Metrics given
		"leader: broker 2", "<td class=\"num\">10</td>", // voter 1 is 10 records behind
		"0 offline", "1 under-replicated", "orders</a>-2", `data-topic="orders"`, `<span class="tag">internal</span>`,
		`data-stream="/events?view=overview"`)
	if strings.Index(body, `data-topic="orders"`) > strings.Index(body, `data-topic="__consumer_offsets"`) {
		t.Error("internal topics are listed before the others")
	}
}

func TestOverviewSaysWhenQuorumIsNotServed(t *testing.T) {
	f := newFake()
	f.quorumErr = ErrNotServed
	_, srv := newTestConsole(t, f, nil)
	_, body := get(t, srv, "/")
	mustContain(t, body, "the brokers do not serve DescribeQuorum")
}

// TestOverviewRates: broker rates are counter deltas over the time
// between two collections.
func TestOverviewRates(t *testing.T) {
	st := newStore(10, 100)
	t0 := time.Unix(1000, 0)
	raw := func(in, out, req float64) *overviewRaw {
		return &overviewRaw{info: ClusterInfo{Brokers: []Broker{{ID: 1}}}, samples: map[int32]Sample{1: {BytesIn: in, BytesOut: out, Requests: req}}, quorumErr: ErrNotServed}
	}
	if v := buildOverview(st, raw(100, 0, 10), t0); v.Brokers[0].Rates || v.Brokers[0].MetricsNote != "measuring…" {
		t.Fatalf("first sample: %+v", v.Brokers[0])
	}
	v := buildOverview(st, raw(4100, 2000, 30), t0.Add(2*time.Second))
	b := v.Brokers[0]
	if !b.Rates || b.BytesIn != 2000 || b.BytesOut != 1000 || b.Requests != 10 {
		t.Fatalf("rates %+v, want 2000 in, 1000 out, 10 requests per second", b)
	}
}

func TestTopicPage(t *testing.T) {
	f := newFake()
	tp := f.topics["orders"]
	tp.end[0], tp.end[1], tp.end[2] = 100, 50, 0
	tp.size[0], tp.size[1] = 3000, 1000
	f.groups["g1"] = &fakeGroup{typ: GroupClassic, committed: map[TP]int64{{"orders", 0}: 40, {"orders", 1}: 50}}
	_, srv := newTestConsole(t, f, nil)
	code, body := get(t, srv, "/topic?name=orders")
	if code != http.StatusOK {
		t.Fatalf("status %d\n%s", code, body)
	}
	mustContain(t, body, `<tr data-partition="0">`, `<td class="num" data-col="end">100</td>`, "! under-replicated",
		"retention.ms", "<strong>DYNAMIC_TOPIC_CONFIG</strong>", `data-group="g1"`, "60 records behind", `id="browse"`, `id="produce"`)
	// Bytes per broker: partitions 0 and 1 have replicas on brokers 1 and 2.
	if !strings.Contains(body, `data-label="broker 1" data-value="4000"`) || !strings.Contains(body, `data-label="broker 2" data-value="4000"`) {
		t.Error("bytes per broker bars are missing or wrong")
	}
	// Backlog per partition of g1: p0 is 60 behind, p1 none.
	if !strings.Contains(body, `data-label="p0" data-value="60"`) || !strings.Contains(body, `data-label="p1" data-value="0"`) {
		t.Error("backlog bars are missing or wrong")
	}
	code, body = get(t, srv, "/topic?name=nosuch")
	if code != http.StatusOK || !strings.Contains(body, "No topic nosuch") {
		t.Errorf("a missing topic: %d %s", code, body)
	}
}

func TestGroupPages(t *testing.T) {
	f := newFake()
	f.topics["orders"].end[0] = 10
	f.groups["g1"] = &fakeGroup{typ: GroupConsumer, committed: map[TP]int64{{"orders", 0}: 4},
		members: []Member{{ID: "m-1", ClientID: "app", Host: "/127.0.0.1", Assigned: []TP{{"orders", 0}, {"orders", 1}}}}}
	f.groups["s1"] = &fakeGroup{typ: GroupShare, committed: map[TP]int64{{"orders", 0}: 7}}
	m := &fakeMetrics{}
	m.set(1, Sample{Shares: map[ShareKey]ShareSample{{"s1", TP{"orders", 0}}: {InFlight: 3, Acquired: 2, Available: 1, Redeliveries: 5}}, Parked: 10, ParkedSeconds: 5})
	_, srv := newTestConsole(t, f, m)
	_, body := get(t, srv, "/groups")
	mustContain(t, body, `<tr data-group="g1">`, "<td>consumer</td>", "<td>share</td>")
	_, body = get(t, srv, "/group?id=g1")
	mustContain(t, body, "m-1", "orders: 0,1", `<tr data-tp="orders-0">`, `<td class="num" data-col="lag">6</td>`, "total lag 6 records")
	_, body = get(t, srv, "/group?id=s1")
	mustContain(t, body, "ShareFetch waits", `<tr data-broker="1">`, `<td class="num" data-col="committed">7</td>`, `<td class="num" data-col="lag">3</td>`, `<td class="num">3</td>`, "measuring…")
	_, body = get(t, srv, "/group?id=nope")
	mustContain(t, body, "No group nope")
}

func TestBadParametersGetClearMessages(t *testing.T) {
	_, srv := newTestConsole(t, newFake(), nil)
	for _, tc := range []struct {
		path, want string
	}{
		{"/topic?name=a/b", "only letters, digits"},
		{"/topic", "a topic name is required"},
		{"/group", "a group id is required"},
		{"/events?view=nope", "want one of overview, topic, groups, group"},
		{"/api/view?view=topic&name=", "a topic name is required"},
		{"/records?topic=orders&partition=-1", "out of range"},
		{"/records?topic=orders&limit=0", "want 1 to 500"},
		{"/records?topic=orders&format=xml", "want one of auto, text, json, hex"},
		{"/records?topic=orders&offset=1&timestamp=5", "not both"},
		{"/records?topic=orders&timestamp=yesterday", "not a time"},
		{"/records?topic=orders&offset=abc&accept=json", "not a whole number"},
	} {
		code, body := get(t, srv, tc.path)
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %q, want 400 saying %q", tc.path, code, body, tc.want)
		}
	}
}

func TestActions(t *testing.T) {
	f := newFake()
	_, srv := newTestConsole(t, f, nil)
	// Without the console's header (a cross-site form), nothing happens.
	resp, err := http.PostForm(srv.URL+"/api/topics/create", url.Values{"name": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an action without the header: %d", resp.StatusCode)
	}
	for _, tc := range []struct {
		path       string
		form       url.Values
		wantStatus int
		wantMsg    string
		wantAction string // the fake's last action afterwards
	}{
		{"/api/topics/create", url.Values{"name": {"new"}, "partitions": {"abc"}}, 400, `partitions "abc": not a whole number`, ""},
		{"/api/topics/create", url.Values{"name": {"new"}, "partitions": {"0"}}, 400, "at least one partition", ""},
		{"/api/topics/create", url.Values{"name": {"new"}, "configs": {"retention ms=1"}}, 400, "only letters", ""},
		{"/api/topics/create", url.Values{"name": {"new"}, "partitions": {"4"}, "replication_factor": {"2"}, "configs": {"retention.ms=1000"}}, 200, "created topic new", "create new 4 2 map[retention.ms:1000]"},
		{"/api/topics/create", url.Values{"name": {"new"}}, 502, "TOPIC_ALREADY_EXISTS", "create new 4 2 map[retention.ms:1000]"},
		{"/api/topics/delete", url.Values{"name": {"new"}}, 400, "type the topic's name to confirm", "create new 4 2 map[retention.ms:1000]"},
		{"/api/topics/delete", url.Values{"name": {"new"}, "confirm": {"other"}}, 400, "type the topic's name", "create new 4 2 map[retention.ms:1000]"},
		{"/api/topics/delete", url.Values{"name": {"new"}, "confirm": {"new"}}, 200, "deleted topic new", "delete new"},
		{"/api/configs/alter", url.Values{"topic": {"orders"}, "name": {"retention.ms"}, "value": {"5"}}, 200, "retention.ms=5", "alter orders retention.ms=5"},
		{"/api/configs/alter", url.Values{"topic": {"orders"}, "name": {"retention.ms"}, "op": {"delete"}}, 200, "back to its default", "alter orders retention.ms delete"},
		{"/api/elect", url.Values{"partitions": {"1"}}, 400, "name the topic", "alter orders retention.ms delete"},
		{"/api/elect", url.Values{"topic": {"orders"}}, 200, "3 partitions, 0 failed", "elect [{orders 0} {orders 1} {orders 2}]"},
		{"/api/reassign", url.Values{"topic": {"orders"}, "moves": {"0: 2,1"}}, 400, "confirm", "elect [{orders 0} {orders 1} {orders 2}]"},
		{"/api/reassign", url.Values{"topic": {"orders"}, "moves": {"0: 2,1\n1: cancel"}, "confirm": {"orders"}}, 200, "2 partitions, 0 failed", "reassign map[{orders 0}:[2 1] {orders 1}:[]]"},
		{"/api/produce", url.Values{"topic": {"orders"}, "partition": {"x"}}, 400, "not a whole number", "reassign map[{orders 0}:[2 1] {orders 1}:[]]"},
	} {
		code, r := post(t, srv, tc.path, tc.form)
		if code != tc.wantStatus || !strings.Contains(r.Message, tc.wantMsg) || r.OK != (code == 200) {
			t.Errorf("%s %v: %d %+v, want %d saying %q", tc.path, tc.form, code, r, tc.wantStatus, tc.wantMsg)
		}
		f.mu.Lock()
		last := ""
		if len(f.actions) > 0 {
			last = f.actions[len(f.actions)-1]
		}
		f.mu.Unlock()
		if last != tc.wantAction {
			t.Errorf("%s %v: last action %q, want %q", tc.path, tc.form, last, tc.wantAction)
		}
	}
}

func TestResetOffsets(t *testing.T) {
	f := newFake()
	tp := f.topics["orders"]
	tp.start[0], tp.end[0], tp.end[1], tp.end[2] = 10, 100, 50, 0
	f.groups["g"] = &fakeGroup{typ: GroupClassic, committed: map[TP]int64{{"orders", 0}: 40}}
	_, srv := newTestConsole(t, f, nil)
	form := url.Values{"group": {"g"}, "topic": {"orders"}, "to": {"shift"}, "value": {"-35"}, "dry_run": {"1"}}
	code, r := post(t, srv, "/api/groups/reset", form)
	if code != 200 || len(r.Preview) != 3 {
		t.Fatalf("dry run: %d %+v", code, r)
	}
	// p0: 40-35 = 5, clamped to the log start 10; p1 has no commit: from
	// the end, 50-35; p2: empty, stays at 0.
	want := []OffsetChange{{"orders", 0, 40, 10}, {"orders", 1, -1, 15}, {"orders", 2, -1, 0}}
	for i, c := range r.Preview {
		if c != want[i] {
			t.Errorf("preview %d: %+v, want %+v", i, c, want[i])
		}
	}
	if f.groups["g"].committed[TP{"orders", 0}] != 40 {
		t.Fatal("a dry run moved offsets")
	}
	form.Del("dry_run")
	if code, r := post(t, srv, "/api/groups/reset", form); code != 400 || !strings.Contains(r.Message, "confirm") {
		t.Fatalf("unconfirmed reset: %d %+v", code, r)
	}
	form.Set("confirm", "g")
	form.Set("to", "earliest")
	form.Set("partitions", "0,1")
	if code, r := post(t, srv, "/api/groups/reset", form); code != 200 {
		t.Fatalf("reset: %d %+v", code, r)
	}
	if got := f.groups["g"].committed; got[TP{"orders", 0}] != 10 || got[TP{"orders", 1}] != 0 || len(got) != 2 {
		t.Fatalf("committed after reset: %v", got)
	}
	f.groups["g"].members = []Member{{ID: "m"}}
	if code, r := post(t, srv, "/api/groups/reset", form); code != 502 || !strings.Contains(strings.Join(r.Details, " "), "stop its consumers") {
		t.Fatalf("reset of a group with members: %d %+v", code, r)
	}
}

func TestProduceAndBrowse(t *testing.T) {
	f := newFake()
	_, srv := newTestConsole(t, f, nil)
	for _, v := range []string{`{"n":1}`, "plain"} {
		if code, r := post(t, srv, "/api/produce", url.Values{"topic": {"orders"}, "partition": {"1"}, "key": {"k"}, "value": {v}, "headers": {"trace=abc"}}); code != 200 {
			t.Fatalf("produce: %d %+v", code, r)
		}
	}
	code, body := get(t, srv, "/records?topic=orders&partition=1&accept=json")
	if code != 200 {
		t.Fatalf("browse: %d %s", code, body)
	}
	var v RecordsView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Records) != 2 || v.Records[0].Value.Format != "json" || v.Records[1].Value.Text != "plain" || v.Records[0].Headers[0].Key != "trace" || v.Next != 2 {
		t.Fatalf("browsed %+v", v)
	}
	_, body = get(t, srv, "/records?topic=orders&partition=1&offset=1&format=hex")
	mustContain(t, body, `<tr data-offset="1">`, "70 6c 61 69 6e")
	if strings.Contains(body, `data-offset="0"`) {
		t.Error("a browse from offset 1 showed offset 0")
	}
	// By time: the fake stamps offset N at 1_700_000_000_000+N ms.
	_, body = get(t, srv, "/records?topic=orders&partition=1&timestamp=1700000000001")
	mustContain(t, body, `<tr data-offset="1">`)
}

func TestHostsOtherThanLoopbackAreRefused(t *testing.T) {
	_, srv := newTestConsole(t, newFake(), nil)
	for host, want := range map[string]int{"evil.example": http.StatusMisdirectedRequest, "localhost:8080": 200, "127.0.0.1": 200, "[::1]:80": 200} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/static/console.css", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestEventsStreamLiveParts: the stream sends the view's live part
// rendered, again after each collection.
func TestEventsStreamLiveParts(t *testing.T) {
	f := newFake()
	_, srv := newTestConsole(t, f, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events?view=topic&name=orders", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	events := 0
	for events < 2 && sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var msg map[string]string
		if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &msg); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(msg["html"], `<tr data-partition="2">`) {
			t.Fatalf("event without the partitions: %v", msg)
		}
		events++
	}
	if events < 2 {
		t.Fatalf("%d events: %v", events, sc.Err())
	}
}
