package quota

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/metadata"
	"weir/internal/protocol"
)

// FuzzAlteration decodes AlterClientQuotas requests from arbitrary bytes:
// parsing an entry never panics, and the records of an entry it accepts
// apply to an image whatever that image holds.
func FuzzAlteration(f *testing.F) {
	name := "alice"
	for _, e := range []kmsg.AlterClientQuotasRequestEntry{
		{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: &name}}, Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: ProducerByteRate, Value: 1024}, {Key: ConsumerByteRate, Remove: true}}},
		{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id"}, {Type: "user", Name: &name}}, Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: RequestPercentage, Value: 0.5}}},
		{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "ip", Name: kmsg.StringPtr("::1")}}, Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: ConnectionCreationRate, Value: 3}}},
	} {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version = 1
		req.Entries = append(req.Entries, e)
		f.Add(req.AppendTo(nil))
	}
	base := quotasImageF(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if protocol.Check(49, 1, body) != nil {
			return
		}
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Version = 1
		if req.ReadFrom(body) != nil {
			return
		}
		for i := range req.Entries {
			alt, err := ParseAlteration(&req.Entries[i])
			if err != nil {
				if err.Code == nil || err.Message == "" {
					t.Fatalf("error without a code or message: %+v", err)
				}
				continue
			}
			recs := alt.Records(base.ClientQuotas().Get(alt.Entity))
			if _, _, err := base.Apply(base.Offset()+1, recs); err != nil {
				t.Fatalf("records of an accepted entry %+v do not apply: %v", req.Entries[i], err)
			}
		}
	})
}

// FuzzDescribe decodes DescribeClientQuotas requests from arbitrary
// bytes: Describe answers each without panicking, with an error code and
// message or with entries that exist.
func FuzzDescribe(f *testing.F) {
	alice := "alice"
	for _, comps := range [][]kmsg.DescribeClientQuotasRequestComponent{
		nil,
		{{EntityType: "user", MatchType: kmsg.QuotasMatchTypeExact, Match: &alice}},
		{{EntityType: "user", MatchType: kmsg.QuotasMatchTypeAny}, {EntityType: "client-id", MatchType: kmsg.QuotasMatchTypeDefault}},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version, req.Components = 1, comps
		f.Add(req.AppendTo(nil))
	}
	img := quotasImageF(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if protocol.Check(48, 1, body) != nil {
			return
		}
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Version = 1
		if req.ReadFrom(body) != nil {
			return
		}
		resp := Describe(img.ClientQuotas(), req)
		if resp.ErrorCode != 0 {
			if resp.ErrorMessage == nil || resp.Entries != nil {
				t.Fatalf("error %d with message %v and %d entries", resp.ErrorCode, resp.ErrorMessage, len(resp.Entries))
			}
			return
		}
		if resp.Entries == nil {
			t.Fatal("null entries without an error")
		}
		for _, e := range resp.Entries {
			parts := make([]EntityPart, len(e.Entity))
			for i, p := range e.Entity {
				parts[i] = EntityPart{Type: p.Type, Name: p.Name}
			}
			ent, err := ParseEntity(parts)
			if err != nil || img.ClientQuotas().Get(ent) == nil {
				t.Fatalf("listed entity %v that the image does not hold (%v)", parts, err)
			}
		}
		resp.AppendTo(nil)
	})
}

// FuzzManager records arbitrary values at arbitrary times for a few
// clients: throttle times are never negative, and a client without a
// quota is never throttled.
func FuzzManager(f *testing.F) {
	f.Add([]byte{0, 0, 10, 200, 1, 1, 0, 255, 2, 2, 255, 255})
	f.Add([]byte{0, 3, 0, 1, 0, 3, 0, 1, 0, 3, 9, 1})
	img := quotasImageF(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m := NewManager(Config{Samples: 1 + int(len(data)%12), Window: time.Duration(1+len(data)%3) * time.Second})
		now := time.UnixMilli(1_700_000_000_000)
		users := []string{"alice", "bob", "", "carol"}
		for len(data) >= 4 {
			op, who, dt, v := data[0], data[1], data[2], data[3]
			data = data[4:]
			now = now.Add(time.Duration(dt) * 37 * time.Millisecond)
			c := Client{User: users[int(who)%len(users)], ClientID: [...]string{"app", "x", ""}[int(who/4)%3]}
			k := Kind(op % 3)
			var d time.Duration
			switch op % 5 {
			case 3:
				k = Request
				d = m.RecordRequestTime(img.ClientQuotas(), c, time.Duration(v)*time.Millisecond, now)
			case 4:
				m.Unrecord(img.ClientQuotas(), k, c, float64(v)*100, now)
				continue
			default:
				d = m.Record(img.ClientQuotas(), k, c, float64(v)*1000, now)
			}
			if d < 0 {
				t.Fatalf("negative throttle %s", d)
			}
			if _, limited := m.Limit(img.ClientQuotas(), k, c); d > 0 && !limited {
				t.Fatalf("client %+v throttled %s without a %s quota", c, d, k)
			}
		}
	})
}

func quotasImageF(f *testing.F) *metadata.Image {
	img, _, err := metadata.Empty().Apply(0, []metadata.Record{
		&metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{User: metadata.Named("alice")}, Key: ProducerByteRate, Value: 1000},
		&metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{User: metadata.Named("alice")}, Key: ConsumerByteRate, Value: 2000},
		&metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{User: metadata.DefaultName, ClientID: metadata.Named("app")}, Key: RequestPercentage, Value: 5},
		&metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{ClientID: metadata.DefaultName}, Key: ProducerByteRate, Value: 300},
		&metadata.ClientQuotaRecord{Entity: metadata.QuotaEntity{IP: metadata.Named("10.0.0.1")}, Key: ConnectionCreationRate, Value: 5},
	})
	if err != nil {
		f.Fatal(err)
	}
	return img
}
