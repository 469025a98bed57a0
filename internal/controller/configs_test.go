package controller

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

type op struct {
	op  kmsg.IncrementalAlterConfigOp
	key string
	val *string
}

func ops(in ...op) []kmsg.IncrementalAlterConfigsRequestResourceConfig {
	var out []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, o := range in {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Op, c.Name, c.Value = o.op, o.key, o.val
		out = append(out, c)
	}
	return out
}

const (
	opSet = kmsg.IncrementalAlterConfigOpSet
	opDel = kmsg.IncrementalAlterConfigOpDelete
	opApp = kmsg.IncrementalAlterConfigOpAppend
	opSub = kmsg.IncrementalAlterConfigOpSubtract
)

func TestPlainConfigsIncremental(t *testing.T) {
	s := kmsg.StringPtr
	for _, tc := range []struct {
		name    string
		current map[string]string
		ops     []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want    map[string]string
		code    int16
	}{
		{"set", nil, ops(op{opSet, "a", s("1")}), map[string]string{"a": "1"}, 0},
		{"set over", map[string]string{"a": "1", "b": "2"}, ops(op{opSet, "a", s("3")}), map[string]string{"a": "3", "b": "2"}, 0},
		{"delete", map[string]string{"a": "1", "b": "2"}, ops(op{opDel, "a", nil}), map[string]string{"b": "2"}, 0},
		{"delete missing", map[string]string{"b": "2"}, ops(op{opDel, "a", nil}), map[string]string{"b": "2"}, 0},
		{"append to nothing", nil, ops(op{opApp, "p", s("x,y")}), map[string]string{"p": "x,y"}, 0},
		{"append keeps order and skips present", map[string]string{"p": "x,y"}, ops(op{opApp, "p", s("y,z")}), map[string]string{"p": "x,y,z"}, 0},
		{"subtract", map[string]string{"p": "x,y,z"}, ops(op{opSub, "p", s("x,z,w")}), map[string]string{"p": "y"}, 0},
		{"in order", nil, ops(op{opSet, "a", s("1")}, op{opDel, "a", nil}, op{opApp, "l", s("q")}), map[string]string{"l": "q"}, 0},
		{"null set", nil, ops(op{opSet, "a", nil}), nil, kerr.InvalidRequest.Code},
		{"null append", nil, ops(op{opApp, "a", nil}), nil, kerr.InvalidRequest.Code},
		{"unknown op", nil, ops(op{9, "a", s("1")}), nil, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.current)
			got, err := PlainConfigs{}.Incremental(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}, tc.current, tc.ops)
			if !maps.Equal(tc.current, before) {
				t.Fatal("current overrides modified")
			}
			if tc.code != 0 {
				if code, _ := configErr(err); code != tc.code {
					t.Fatalf("err %v, want code %d", err, tc.code)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

// configImage is an image with broker 1 and topic t, whose overrides are
// keep=1 and gone=2.
func configImage(t *testing.T) *metadata.Image {
	t.Helper()
	tid := metadata.TopicID{1}
	img, _, err := metadata.Empty().Apply(1, []metadata.Record{
		&metadata.RegisterBrokerRecord{ID: 1, Incarnation: [16]byte{1}, Epoch: 1,
			Endpoints: []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9001}}},
		&metadata.TopicRecord{Name: "t", ID: tid},
		&metadata.PartitionRecord{TopicID: tid, Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		&metadata.ConfigRecord{Resource: metadata.ResourceTopic, Name: "t", Key: "keep", Value: "1"},
		&metadata.ConfigRecord{Resource: metadata.ResourceTopic, Name: "t", Key: "gone", Value: "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

var topicT = metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}

// TestIncrementalAlterConfigs decides IncrementalAlterConfigs against the
// controller's view: changes are diffs against it, one batch for the
// request, per-resource errors.
func TestIncrementalAlterConfigs(t *testing.T) {
	img := configImage(t)
	c := New(Config{}, img)

	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	add := func(typ kmsg.ConfigResourceType, name string, o ...op) {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = typ, name, ops(o...)
		req.Resources = append(req.Resources, r)
	}
	s := kmsg.StringPtr
	add(kmsg.ConfigResourceTypeTopic, "t", op{opSet, "keep", s("1")}, op{opDel, "gone", nil},
		op{opSet, "new", s("3")})
	add(kmsg.ConfigResourceTypeTopic, "missing", op{opSet, "a", s("1")})
	add(kmsg.ConfigResourceTypeBroker, "", op{opSet, "log.retention.ms", s("5")})
	add(kmsg.ConfigResourceTypeBrokerLogger, "g", op{opSet, "a", s("1")})
	add(kmsg.ConfigResourceTypeTopic, "t", op{opSet, "x", nil})

	resp, recs := c.IncrementalAlterConfigs(req)
	wantCodes := []int16{0, kerr.UnknownTopicOrPartition.Code, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}
	for i, r := range resp.Resources {
		if r.ErrorCode != wantCodes[i] {
			t.Fatalf("resource %d (%s): code %d, want %d", i, r.ResourceName, r.ErrorCode, wantCodes[i])
		}
	}
	if m := resp.Resources[1].ErrorMessage; m == nil || *m != "Topic missing does not exist." {
		t.Fatalf("message %v", m)
	}
	// Only the differences are written: delete "gone", set "new", set the
	// broker default. "keep" is unchanged.
	if len(recs) != 3 {
		t.Fatalf("%d records: %v", len(recs), recs)
	}
	next, _, err := img.Apply(2, recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := next.Configs(topicT); !maps.Equal(got, map[string]string{"keep": "1", "new": "3"}) {
		t.Fatalf("topic configs %v", got)
	}
	if v, _ := next.Config(metadata.ConfigResource{Type: metadata.ResourceBroker}, "log.retention.ms"); v != "5" {
		t.Fatalf("broker default %q", v)
	}

	// ValidateOnly: the same answers, nothing written.
	req.ValidateOnly = true
	resp, recs = New(Config{}, img).IncrementalAlterConfigs(req)
	if len(recs) != 0 {
		t.Fatalf("validate only wrote %d records", len(recs))
	}
	for i, r := range resp.Resources {
		if r.ErrorCode != wantCodes[i] {
			t.Fatalf("validate only, resource %d: code %d, want %d", i, r.ErrorCode, wantCodes[i])
		}
	}
}

// TestConfigsDecidedOnTheView: two requests decided one after the other,
// the first not yet committed, each apply to what the other left: an
// incremental SET after a legacy replace keeps the replaced set, and a
// legacy replace after an incremental SET removes the key it added. This
// is what a broker forwarding its own view's difference got wrong.
func TestConfigsDecidedOnTheView(t *testing.T) {
	s := kmsg.StringPtr
	incremental := func(o ...op) *kmsg.IncrementalAlterConfigsRequest {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeTopic, "t", ops(o...)
		req.Resources = append(req.Resources, r)
		return req
	}
	legacy := func(kv ...string) *kmsg.AlterConfigsRequest {
		req := kmsg.NewPtrAlterConfigsRequest()
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		for i := 0; i < len(kv); i += 2 {
			e := kmsg.NewAlterConfigsRequestResourceConfig()
			e.Name, e.Value = kv[i], s(kv[i+1])
			r.Configs = append(r.Configs, e)
		}
		req.Resources = append(req.Resources, r)
		return req
	}
	type step func(c *Controller) (int16, []metadata.Record)
	inc := func(o ...op) step {
		return func(c *Controller) (int16, []metadata.Record) {
			resp, recs := c.IncrementalAlterConfigs(incremental(o...))
			return resp.Resources[0].ErrorCode, recs
		}
	}
	leg := func(kv ...string) step {
		return func(c *Controller) (int16, []metadata.Record) {
			resp, recs := c.LegacyAlterConfigs(legacy(kv...))
			return resp.Resources[0].ErrorCode, recs
		}
	}
	for _, tc := range []struct {
		name  string
		steps []step
		want  map[string]string
	}{
		{"legacy then incremental", []step{leg("a", "1"), inc(op{opSet, "b", s("2")})}, map[string]string{"a": "1", "b": "2"}},
		{"incremental then legacy", []step{inc(op{opSet, "b", s("2")}), leg("a", "1")}, map[string]string{"a": "1"}},
		{"legacy empties", []step{leg()}, map[string]string{}},
		{"append after legacy", []step{leg("l", "x"), inc(op{opApp, "l", s("y")})}, map[string]string{"l": "x,y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			committed := configImage(t)
			c := New(Config{}, committed)
			var batches [][]metadata.Record
			for i, st := range tc.steps {
				code, recs := st(c)
				if code != 0 {
					t.Fatalf("step %d: %v", i, kerr.ErrorForCode(code))
				}
				batches = append(batches, recs)
			}
			// Commit the batches in order, as the log would.
			for _, recs := range batches {
				next, d, err := committed.Apply(committed.Offset()+1, recs)
				if err != nil {
					t.Fatal(err)
				}
				committed = next
				c.Committed(next, d)
			}
			if got := committed.Configs(topicT); !maps.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Fatalf("configs %v, want %v", got, tc.want)
			}
		})
	}
}

// policy is a ConfigPolicy that refuses a value named "bad" with the error
// it holds and records what it saw.
type policy struct {
	err  error
	seen []map[string]string
}

func (p *policy) Incremental(res metadata.ConfigResource, current map[string]string, o []kmsg.IncrementalAlterConfigsRequestResourceConfig) (map[string]string, error) {
	p.seen = append(p.seen, maps.Clone(current))
	next, err := PlainConfigs{}.Incremental(res, current, o)
	if err == nil && next["x"] == "bad" {
		return nil, p.err
	}
	return next, err
}

func (p *policy) Replace(res metadata.ConfigResource, current map[string]string, e []kmsg.AlterConfigsRequestResourceConfig) (map[string]string, error) {
	p.seen = append(p.seen, maps.Clone(current))
	next, err := PlainConfigs{}.Replace(res, current, e)
	if err == nil && next["x"] == "bad" {
		return nil, p.err
	}
	return next, err
}

// TestConfigPolicy: the controller asks its policy with the view's
// overrides and answers a refusal with the error's code and the message
// after the error's name; legacy AlterConfigs takes only TOPIC and
// BROKER; a null legacy value is INVALID_REQUEST.
func TestConfigPolicy(t *testing.T) {
	p := &policy{err: fmt.Errorf("%w: Invalid value bad for configuration x", kerr.InvalidConfig)}
	c := New(Config{Configs: p}, configImage(t))
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeTopic, "t", ops(op{opSet, "x", kmsg.StringPtr("bad")})
	req.Resources = append(req.Resources, r)
	resp, recs := c.IncrementalAlterConfigs(req)
	got := resp.Resources[0]
	if got.ErrorCode != kerr.InvalidConfig.Code || got.ErrorMessage == nil || *got.ErrorMessage != "Invalid value bad for configuration x" || len(recs) != 0 {
		t.Fatalf("answer %v %v, %d records", got.ErrorCode, got.ErrorMessage, len(recs))
	}
	if !maps.Equal(p.seen[0], map[string]string{"keep": "1", "gone": "2"}) {
		t.Fatalf("policy saw %v", p.seen[0])
	}

	lreq := kmsg.NewPtrAlterConfigsRequest()
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeTopic} {
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = typ, "t"
		e := kmsg.NewAlterConfigsRequestResourceConfig()
		e.Name = "x"
		lr.Configs = append(lr.Configs, e) // a null value
		lreq.Resources = append(lreq.Resources, lr)
	}
	lresp, recs := c.LegacyAlterConfigs(lreq)
	for i, r := range lresp.Resources {
		if r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("legacy resource %d: %v", i, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if len(recs) != 0 {
		t.Fatalf("%d records", len(recs))
	}
	if !errors.Is(p.err, kerr.InvalidConfig) {
		t.Fatal("policy error lost its code")
	}
}

// FuzzPlainConfigs: any operations merge without panicking, never modify
// the current overrides, and end with each key's last SET or DELETE when
// those are all the operations on it.
func FuzzPlainConfigs(f *testing.F) {
	f.Add("a=1", byte(0), "a", "2", true)
	f.Add("p=x,y", byte(2), "p", "y,z", true)
	f.Add("p=x,y", byte(3), "p", ",", false)
	f.Fuzz(func(t *testing.T, cur string, opb byte, key, val string, hasVal bool) {
		current := map[string]string{}
		if k, v, ok := strings.Cut(cur, "="); ok {
			current[k] = v
		}
		before := maps.Clone(current)
		o := op{kmsg.IncrementalAlterConfigOp(opb % 5), key, nil}
		if hasVal {
			o.val = &val
		}
		got, err := PlainConfigs{}.Incremental(metadata.ConfigResource{}, current, ops(o))
		if !maps.Equal(current, before) {
			t.Fatal("current modified")
		}
		if err != nil {
			return
		}
		switch o.op {
		case opSet:
			if got[key] != val {
				t.Fatalf("SET %q=%q gave %q", key, val, got[key])
			}
		case opDel:
			if _, ok := got[key]; ok {
				t.Fatalf("DELETE %q left it", key)
			}
		}
	})
}

// TestUpdateFeatures: changes within weir's levels are recorded (one
// batch, only what changes), a refused change writes nothing for any,
// v2 answers with a top-level error, ValidateOnly writes nothing.
func TestUpdateFeatures(t *testing.T) {
	img := configImage(t)
	update := func(version int16, validate bool, kv ...any) *kmsg.UpdateFeaturesRequest {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version, req.ValidateOnly = version, validate
		for i := 0; i+2 < len(kv)+1; i += 3 {
			u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
			u.Feature, u.MaxVersionLevel, u.UpgradeType = kv[i].(string), int16(kv[i+1].(int)), int8(kv[i+2].(int))
			req.FeatureUpdates = append(req.FeatureUpdates, u)
		}
		return req
	}
	c := New(Config{}, img)
	// group.version at the level it runs at: nothing to write.
	resp, recs := c.UpdateFeatures(update(1, false, "group.version", 1, 1))
	if resp.Results[0].ErrorCode != 0 || len(recs) != 0 {
		t.Fatalf("same level: %+v, %d records", resp.Results, len(recs))
	}
	// One good change and one refused: nothing written, both say so.
	resp, recs = c.UpdateFeatures(update(1, false, "kraft.version", 1, 1, "share.version", 9, 1))
	if len(recs) != 0 || resp.Results[0].ErrorCode != kerr.InvalidUpdateVersion.Code || resp.Results[1].ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("refused: %+v, %d records", resp.Results, len(recs))
	}
	// v2: the refusal is the top-level error.
	resp, recs = c.UpdateFeatures(update(2, false, "share.version", 9, 1))
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || len(resp.Results) != 0 || len(recs) != 0 {
		t.Fatalf("v2 refused: %+v, %d records", resp, len(recs))
	}
	resp, _ = c.UpdateFeatures(update(2, false, "group.version", 1, 1, "group.version", 1, 1))
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a feature named twice: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// A level the log recorded that differs from the one asked for (here
	// a group.version 0 written before) is changed with one record; with
	// ValidateOnly, not.
	off, _, err := img.Apply(2, []metadata.Record{&metadata.FeatureLevelRecord{Name: "group.version", Level: 0}})
	if err != nil {
		t.Fatal(err)
	}
	c = New(Config{}, off)
	if resp, recs = c.UpdateFeatures(update(2, true, "group.version", 1, 1)); resp.ErrorCode != 0 || len(recs) != 0 {
		t.Fatalf("validate only: %+v, %d records", resp, len(recs))
	}
	resp, recs = c.UpdateFeatures(update(2, false, "group.version", 1, 1))
	if resp.ErrorCode != 0 || len(recs) != 1 {
		t.Fatalf("upgrade: %+v, %d records", resp, len(recs))
	}
	next, _, err := off.Apply(3, recs)
	if err != nil {
		t.Fatal(err)
	}
	if l := next.FeatureLevels()["group.version"]; l != 1 {
		t.Fatalf("recorded levels %v", next.FeatureLevels())
	}
}
