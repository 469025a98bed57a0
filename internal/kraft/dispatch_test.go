package kraft

import (
	"maps"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/controller"
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

func TestMergeConfigOps(t *testing.T) {
	s := kmsg.StringPtr
	const (
		set = kmsg.IncrementalAlterConfigOpSet
		del = kmsg.IncrementalAlterConfigOpDelete
		app = kmsg.IncrementalAlterConfigOpAppend
		sub = kmsg.IncrementalAlterConfigOpSubtract
	)
	for _, tc := range []struct {
		name    string
		current map[string]string
		ops     []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want    map[string]string
		code    int16
	}{
		{"set", nil, ops(op{set, "a", s("1")}), map[string]string{"a": "1"}, 0},
		{"set over", map[string]string{"a": "1", "b": "2"}, ops(op{set, "a", s("3")}), map[string]string{"a": "3", "b": "2"}, 0},
		{"delete", map[string]string{"a": "1", "b": "2"}, ops(op{del, "a", nil}), map[string]string{"b": "2"}, 0},
		{"delete missing", map[string]string{"b": "2"}, ops(op{del, "a", nil}), map[string]string{"b": "2"}, 0},
		{"append to nothing", nil, ops(op{app, "p", s("x,y")}), map[string]string{"p": "x,y"}, 0},
		{"append keeps order and skips present", map[string]string{"p": "x,y"}, ops(op{app, "p", s("y,z")}), map[string]string{"p": "x,y,z"}, 0},
		{"subtract", map[string]string{"p": "x,y,z"}, ops(op{sub, "p", s("x,z,w")}), map[string]string{"p": "y"}, 0},
		{"in order", nil, ops(op{set, "a", s("1")}, op{del, "a", nil}, op{app, "l", s("q")}), map[string]string{"l": "q"}, 0},
		{"null set", nil, ops(op{set, "a", nil}), nil, kerr.InvalidRequest.Code},
		{"null append", nil, ops(op{app, "a", nil}), nil, kerr.InvalidRequest.Code},
		{"unknown op", nil, ops(op{9, "a", s("1")}), nil, kerr.InvalidRequest.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := maps.Clone(tc.current)
			got, err := MergeConfigOps(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}, tc.current, tc.ops)
			if !maps.Equal(tc.current, before) {
				t.Fatal("current overrides modified")
			}
			if tc.code != 0 {
				if err == nil || err.Code != tc.code {
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

// TestIncrementalAlterConfigs decides IncrementalAlterConfigs on a
// controller without raft: changes are diffs against the image, one
// batch for the request, and per-resource errors.
func TestIncrementalAlterConfigs(t *testing.T) {
	img := metadata.Empty()
	recs := append([]metadata.Record{brokerRec(1)}, topicRecs("t", 1, 1, 1)...)
	recs = append(recs, &metadata.ConfigRecord{Resource: metadata.ResourceTopic, Name: "t", Key: "keep", Value: "1"},
		&metadata.ConfigRecord{Resource: metadata.ResourceTopic, Name: "t", Key: "gone", Value: "2"})
	img, _, err := img.Apply(1, recs)
	if err != nil {
		t.Fatal(err)
	}
	c := controller.New(controller.Config{}, img)

	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	add := func(typ kmsg.ConfigResourceType, name string, o ...op) {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = typ, name, ops(o...)
		req.Resources = append(req.Resources, r)
	}
	s := kmsg.StringPtr
	add(kmsg.ConfigResourceTypeTopic, "t", op{kmsg.IncrementalAlterConfigOpSet, "keep", s("1")}, op{kmsg.IncrementalAlterConfigOpDelete, "gone", nil},
		op{kmsg.IncrementalAlterConfigOpSet, "new", s("3")})
	add(kmsg.ConfigResourceTypeTopic, "missing", op{kmsg.IncrementalAlterConfigOpSet, "a", s("1")})
	add(kmsg.ConfigResourceTypeBroker, "", op{kmsg.IncrementalAlterConfigOpSet, "log.retention.ms", s("5")})
	add(kmsg.ConfigResourceTypeBrokerLogger, "g", op{kmsg.IncrementalAlterConfigOpSet, "a", s("1")})
	add(kmsg.ConfigResourceTypeTopic, "t", op{kmsg.IncrementalAlterConfigOpSet, "x", nil})

	resp, recsOut := incrementalAlterConfigs(c, req, MergeConfigOps)
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
	if len(recsOut) != 3 {
		t.Fatalf("%d records: %v", len(recsOut), recsOut)
	}
	next, _, err := img.Apply(2, recsOut)
	if err != nil {
		t.Fatal(err)
	}
	got := next.Configs(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"})
	if !maps.Equal(got, map[string]string{"keep": "1", "new": "3"}) {
		t.Fatalf("topic configs %v", got)
	}
	if v, _ := next.Config(metadata.ConfigResource{Type: metadata.ResourceBroker}, "log.retention.ms"); v != "5" {
		t.Fatalf("broker default %q", v)
	}

	// ValidateOnly: the same answers, nothing written.
	req.ValidateOnly = true
	resp, recsOut = incrementalAlterConfigs(controller.New(controller.Config{}, img), req, MergeConfigOps)
	if len(recsOut) != 0 {
		t.Fatalf("validate only wrote %d records", len(recsOut))
	}
	for i, r := range resp.Resources {
		if r.ErrorCode != wantCodes[i] {
			t.Fatalf("validate only, resource %d: code %d, want %d", i, r.ErrorCode, wantCodes[i])
		}
	}
}

// FuzzMergeConfigOps: any operations merge without panicking, never
// modify the current overrides, and end with each key's last SET or
// DELETE when those are all the operations on it.
func FuzzMergeConfigOps(f *testing.F) {
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
		got, err := MergeConfigOps(metadata.ConfigResource{}, current, ops(o))
		if !maps.Equal(current, before) {
			t.Fatal("current modified")
		}
		if err != nil {
			return
		}
		switch o.op {
		case kmsg.IncrementalAlterConfigOpSet:
			if got[key] != val {
				t.Fatalf("SET %q=%q gave %q", key, val, got[key])
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if _, ok := got[key]; ok {
				t.Fatalf("DELETE %q left it", key)
			}
		}
	})
}

// TestDecideSecurityRequests: the controller decides CreateAcls,
// DeleteAcls, AlterClientQuotas and AlterUserScramCredentials, and their
// records apply.
func TestDecideSecurityRequests(t *testing.T) {
	img, _, err := metadata.Empty().Apply(1, []metadata.Record{brokerRec(1)})
	if err != nil {
		t.Fatal(err)
	}
	c := controller.New(controller.Config{}, img)
	create := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.Principal, cr.Host, cr.Operation, cr.PermissionType = 2, "t", "User:a", "*", 3, 3
	create.Creations = append(create.Creations, cr)
	quotas := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: kmsg.StringPtr("a")}}
	e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
	quotas.Entries = append(quotas.Entries, e)
	scram := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	scram.Upsertions = append(scram.Upsertions, kmsg.AlterUserSCRAMCredentialsRequestUpsertion{Name: "a", Mechanism: 1, Iterations: 4096, Salt: []byte("s"), SaltedPassword: make([]byte, 32)})
	deleteAll := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
	deleteAll.Filters = append(deleteAll.Filters, f)
	for i, req := range []kmsg.Request{create, quotas, scram, deleteAll} {
		resp, recs, err := decide(c, req, nil)
		if err != nil || resp.Key() != req.Key() || len(recs) != 1 {
			t.Fatalf("%s: %v, %d records, %v", kmsg.NameForKey(req.Key()), resp, len(recs), err)
		}
		if img, _, err = img.Apply(int64(2+i), recs); err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
	}
	if img.ACLs().Len() != 0 || img.ClientQuotas().Len() != 1 {
		t.Fatalf("acls %d quotas %d", img.ACLs().Len(), img.ClientQuotas().Len())
	}
	if _, ok := img.ScramCredential("a", metadata.ScramSHA256); !ok {
		t.Fatal("no credential")
	}
}
