package quota

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
)

func quotasImage(t *testing.T) *metadata.Image {
	t.Helper()
	set := func(e metadata.QuotaEntity, k string, v float64) metadata.Record {
		return &metadata.ClientQuotaRecord{Entity: e, Key: k, Value: v}
	}
	img, _, err := metadata.Empty().Apply(0, []metadata.Record{
		set(metadata.QuotaEntity{User: metadata.Named("alice")}, ProducerByteRate, 1000),
		set(metadata.QuotaEntity{User: metadata.Named("alice")}, ConsumerByteRate, 2000),
		set(metadata.QuotaEntity{User: metadata.DefaultName}, ProducerByteRate, 500),
		set(metadata.QuotaEntity{User: metadata.Named("alice"), ClientID: metadata.Named("app")}, ProducerByteRate, 100),
		set(metadata.QuotaEntity{User: metadata.Named("alice"), ClientID: metadata.DefaultName}, ProducerByteRate, 200),
		set(metadata.QuotaEntity{ClientID: metadata.Named("app")}, RequestPercentage, 25),
		set(metadata.QuotaEntity{IP: metadata.Named("10.0.0.1")}, ConnectionCreationRate, 5),
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func component(typ string, match kmsg.QuotasMatchType, name *string) kmsg.DescribeClientQuotasRequestComponent {
	return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: match, Match: name}
}

func entries(resp *kmsg.DescribeClientQuotasResponse) string {
	var out []string
	for _, e := range resp.Entries {
		var parts []string
		for _, p := range e.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			parts = append(parts, p.Type+"="+name)
		}
		var vals []string
		for _, v := range e.Values {
			vals = append(vals, v.Key)
		}
		out = append(out, strings.Join(parts, ",")+"{"+strings.Join(vals, ",")+"}")
	}
	return strings.Join(out, " ")
}

func TestDescribe(t *testing.T) {
	img := quotasImage(t)
	alice, app := "alice", "app"
	exact, def, any := kmsg.QuotasMatchTypeExact, kmsg.QuotasMatchTypeDefault, kmsg.QuotasMatchTypeAny
	tests := []struct {
		name   string
		comps  []kmsg.DescribeClientQuotasRequestComponent
		strict bool
		want   string
		code   *kerr.Error
	}{
		{"everything", nil, false,
			"ip=10.0.0.1{connection_creation_rate} client-id=app{request_percentage} user=<default>{producer_byte_rate} " +
				"user=alice{consumer_byte_rate,producer_byte_rate} user=alice,client-id=<default>{producer_byte_rate} user=alice,client-id=app{producer_byte_rate}", nil},
		{"strict and empty matches nothing", nil, true, "", nil},
		{"user alice", []kmsg.DescribeClientQuotasRequestComponent{component("user", exact, &alice)}, false,
			"user=alice{consumer_byte_rate,producer_byte_rate} user=alice,client-id=<default>{producer_byte_rate} user=alice,client-id=app{producer_byte_rate}", nil},
		{"user alice strict", []kmsg.DescribeClientQuotasRequestComponent{component("user", exact, &alice)}, true,
			"user=alice{consumer_byte_rate,producer_byte_rate}", nil},
		{"default user", []kmsg.DescribeClientQuotasRequestComponent{component("user", def, nil)}, false, "user=<default>{producer_byte_rate}", nil},
		{"any user with client app", []kmsg.DescribeClientQuotasRequestComponent{component("user", any, nil), component("client-id", exact, &app)}, false,
			"user=alice,client-id=app{producer_byte_rate}", nil},
		{"any client id", []kmsg.DescribeClientQuotasRequestComponent{component("client-id", any, nil)}, true, "client-id=app{request_percentage}", nil},
		{"empty type", []kmsg.DescribeClientQuotasRequestComponent{component("", any, nil)}, false, "", kerr.InvalidRequest},
		{"type twice", []kmsg.DescribeClientQuotasRequestComponent{component("user", any, nil), component("user", def, nil)}, false, "", kerr.InvalidRequest},
		{"unknown type", []kmsg.DescribeClientQuotasRequestComponent{component("group", any, nil)}, false, "", kerr.UnsupportedVersion},
		{"exact without name", []kmsg.DescribeClientQuotasRequestComponent{component("user", exact, nil)}, false, "", kerr.InvalidRequest},
		{"default with name", []kmsg.DescribeClientQuotasRequestComponent{component("user", def, &alice)}, false, "", kerr.InvalidRequest},
		{"any with name", []kmsg.DescribeClientQuotasRequestComponent{component("user", any, &alice)}, false, "", kerr.InvalidRequest},
		{"unknown match type", []kmsg.DescribeClientQuotasRequestComponent{component("user", 7, nil)}, false, "", kerr.InvalidRequest},
		{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{component("ip", any, nil), component("user", any, nil)}, false, "", kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Components, req.Strict = tt.comps, tt.strict
			resp := Describe(img.ClientQuotas(), req)
			if tt.code != nil {
				if resp.ErrorCode != tt.code.Code || resp.ErrorMessage == nil || resp.Entries != nil {
					t.Fatalf("error %d %v entries %d, want %s", resp.ErrorCode, resp.ErrorMessage, len(resp.Entries), tt.code.Message)
				}
				return
			}
			// Entries is null only with an error: the Java client
			// fails on a null list.
			if resp.ErrorCode != 0 || entries(resp) != tt.want || resp.Entries == nil {
				t.Fatalf("got %d %q\nwant %q", resp.ErrorCode, entries(resp), tt.want)
			}
		})
	}
}

func TestValidateValue(t *testing.T) {
	user := metadata.QuotaEntity{User: metadata.Named("u")}
	ip := metadata.QuotaEntity{IP: metadata.DefaultName}
	for _, tt := range []struct {
		e    metadata.QuotaEntity
		key  string
		v    float64
		want string
	}{
		{user, ProducerByteRate, 1024, ""},
		{user, RequestPercentage, 0.25, ""},
		{user, ControllerMutationRate, 1.5, ""},
		{ip, ConnectionCreationRate, 10, ""},
		{user, ConsumerByteRate, 1.0000001, ""}, // within Kafka's epsilon of a whole number
		{user, ConsumerByteRate, 1.01, "cannot be a fractional value"},
		{user, ConnectionCreationRate, 1, "Invalid configuration key"},
		{ip, ProducerByteRate, 1, "Invalid configuration key"},
		{user, RequestPercentage, 0, "must be greater than 0"},
		{ip, ConnectionCreationRate, 2.5, "cannot be a fractional value"},
	} {
		err := ValidateValue(tt.e, tt.key, tt.v)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Message, tt.want) || err.Code != kerr.InvalidRequest) {
			t.Errorf("ValidateValue(%s, %s, %v) = %v, want %q", tt.e, tt.key, tt.v, err, tt.want)
		}
	}
}

func TestParseEntityRoundTrip(t *testing.T) {
	name := "a"
	ip := "::1"
	for _, parts := range [][]EntityPart{
		{{Type: "user", Name: &name}},
		{{Type: "client-id", Name: nil}, {Type: "user", Name: &name}},
		{{Type: "ip", Name: &ip}},
		{{Type: "ip", Name: nil}},
	} {
		e, err := ParseEntity(parts)
		if err != nil {
			t.Fatalf("%v: %v", parts, err)
		}
		again, err := ParseEntity(EntityParts(e))
		if err != nil || again != e || !metadata.ValidQuotaEntity(e) {
			t.Fatalf("%v: %v, %v", parts, again, err)
		}
	}
}
