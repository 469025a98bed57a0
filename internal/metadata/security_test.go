package metadata

import (
	"bytes"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"testing"
)

func acl(id byte, name string, pattern int8, principal string, op, perm int8) *AccessControlEntryRecord {
	return &AccessControlEntryRecord{ID: [16]byte{id}, ResourceType: 2, ResourceName: name, PatternType: pattern,
		Principal: principal, Host: "*", Operation: op, PermissionType: perm}
}

func scram(user string, m int8, iterations int32) *UserScramCredentialRecord {
	size := scramKeySize(m)
	return &UserScramCredentialRecord{Name: user, Mechanism: m, Salt: []byte("s-" + user), Iterations: iterations,
		StoredKey: slices.Repeat([]byte{1}, size), ServerKey: slices.Repeat([]byte{2}, size)}
}

func quota(e QuotaEntity, key string, v float64) *ClientQuotaRecord {
	return &ClientQuotaRecord{Entity: e, Key: key, Value: v}
}

var (
	userAlice   = QuotaEntity{User: Named("alice")}
	clientP     = QuotaEntity{ClientID: Named("p1")}
	aliceAnyCID = QuotaEntity{User: Named("alice"), ClientID: DefaultName}
)

// securityImage holds two ACLs, credentials of two users and quotas of
// three entities.
func securityImage(t testing.TB) *Image {
	img, _ := mustApply(t, baseImage(t),
		acl(1, "orders", 3, "User:alice", 3, 3),
		acl(2, "ord", 4, "User:*", 4, 2),
		scram("alice", ScramSHA256, 4096),
		scram("alice", ScramSHA512, 8192),
		scram("bob", ScramSHA256, 16384),
		quota(userAlice, "producer_byte_rate", 1<<20),
		quota(userAlice, "consumer_byte_rate", 2<<20),
		quota(clientP, "request_percentage", 12.5),
		quota(aliceAnyCID, "producer_byte_rate", 500),
	)
	return img
}

func TestSecurityRecordsApply(t *testing.T) {
	img := securityImage(t)
	if n := img.ACLs().Len(); n != 2 {
		t.Fatalf("%d acls", n)
	}
	if a, ok := img.ACLs().Get([16]byte{2}); !ok || a.ResourceName != "ord" || a.PatternType != 4 || a.PermissionType != 2 {
		t.Fatalf("acl 2: %+v, %v", a, ok)
	}
	if id, ok := img.ACLs().Find((*ACL)(acl(9, "orders", 3, "User:alice", 3, 3))); !ok || id != [16]byte{1} {
		t.Fatalf("Find = %v, %v", id, ok)
	}
	c, ok := img.ScramCredential("alice", ScramSHA512)
	if !ok || c.Iterations != 8192 || string(c.Salt) != "s-alice" || len(c.StoredKey) != 64 {
		t.Fatalf("alice's SCRAM-SHA-512: %+v, %v", c, ok)
	}
	if _, ok := img.ScramCredential("bob", ScramSHA512); ok {
		t.Fatal("bob has no SCRAM-SHA-512 credential")
	}
	var seen []string
	img.EachScramCredential(func(u string, m int8, _ ScramCredential) bool {
		seen = append(seen, u+"/"+ScramMechanismName(m))
		if back, ok := ScramMechanismByName(ScramMechanismName(m)); !ok || back != m {
			t.Fatalf("ScramMechanismByName(%q) = %d, %v", ScramMechanismName(m), back, ok)
		}
		return true
	})
	if _, ok := ScramMechanismByName("SCRAM-SHA-1"); ok {
		t.Fatal("SCRAM-SHA-1 is not a Kafka mechanism")
	}
	if want := []string{"alice/SCRAM-SHA-256", "alice/SCRAM-SHA-512", "bob/SCRAM-SHA-256"}; !slices.Equal(seen, want) {
		t.Fatalf("credentials %v, want %v", seen, want)
	}
	q := img.ClientQuotas()
	if v, ok := q.Value(userAlice, "consumer_byte_rate"); !ok || v != 2<<20 {
		t.Fatalf("alice's consumer_byte_rate %v, %v", v, ok)
	}
	if got, want := q.Entities(), []QuotaEntity{clientP, userAlice, aliceAnyCID}; !reflect.DeepEqual(got, want) {
		t.Fatalf("entities %v, want %v", got, want)
	}

	next, d := mustApply(t, img,
		&RemoveAccessControlEntryRecord{ID: [16]byte{1}},
		&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA256},
		&ClientQuotaRecord{Entity: clientP, Key: "request_percentage", Remove: true},
		&ClientQuotaRecord{Entity: clientP, Key: "absent", Remove: true}, // nothing to remove: no change
		quota(userAlice, "producer_byte_rate", 1<<20),                    // same value: no change
	)
	if !d.ACLs || !d.Scram || !reflect.DeepEqual(d.ClientQuotas, []QuotaEntity{clientP}) || d.Empty() {
		t.Fatalf("delta acls=%v scram=%v quotas=%v", d.ACLs, d.Scram, d.ClientQuotas)
	}
	if next.ACLs().Len() != 1 || img.ACLs().Len() != 2 {
		t.Fatal("removing an acl changed the old image, or did not change the new one")
	}
	if _, ok := next.ScramCredential("alice", ScramSHA256); ok {
		t.Fatal("removed credential still there")
	}
	if _, ok := img.ScramCredential("alice", ScramSHA256); !ok {
		t.Fatal("the old image lost a credential")
	}
	if next.ClientQuotas().Get(clientP) != nil || next.ClientQuotas().Len() != 2 {
		t.Fatalf("quotas after removal: %v", next.ClientQuotas().Entities())
	}
	// A batch without security records shares the sets.
	same, d := mustApply(t, next, &ConfigRecord{Resource: ResourceBroker, Key: "k", Value: "v"})
	if same.ACLs() != next.ACLs() || same.ClientQuotas() != next.ClientQuotas() || d.ACLs || d.Scram || d.ClientQuotas != nil {
		t.Fatal("an unrelated batch copied the security sets")
	}
}

func TestSecurityRecordsRejected(t *testing.T) {
	img := securityImage(t)
	badKey := scram("carol", ScramSHA256, 4096)
	badKey.ServerKey = badKey.ServerKey[:31]
	tests := []struct {
		name string
		rec  Record
	}{
		{"acl zero id", acl(0, "x", 3, "User:a", 3, 3)},
		{"acl existing id", acl(1, "x", 3, "User:a", 3, 3)},
		{"acl repeats another", acl(9, "orders", 3, "User:alice", 3, 3)},
		{"acl resource type any", &AccessControlEntryRecord{ID: [16]byte{9}, ResourceType: 1, ResourceName: "x", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}},
		{"acl resource type 8", &AccessControlEntryRecord{ID: [16]byte{9}, ResourceType: 8, ResourceName: "x", PatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}},
		{"acl pattern match", acl(9, "x", 2, "User:a", 3, 3)},
		{"acl operation any", acl(9, "x", 3, "User:a", 1, 3)},
		{"acl operation 16", acl(9, "x", 3, "User:a", 16, 3)},
		{"acl permission any", acl(9, "x", 3, "User:a", 3, 1)},
		{"acl empty name", acl(9, "", 3, "User:a", 3, 3)},
		{"acl principal without type", acl(9, "x", 3, "alice", 3, 3)},
		{"remove unknown acl", &RemoveAccessControlEntryRecord{ID: [16]byte{9}}},
		{"scram empty user", scram("", ScramSHA256, 4096)},
		{"scram unknown mechanism", &UserScramCredentialRecord{Name: "u", Mechanism: 3, Iterations: 4096}},
		{"scram too few iterations", scram("u", ScramSHA256, 4095)},
		{"scram too many iterations", scram("u", ScramSHA512, 16385)},
		{"scram key size", badKey},
		{"remove unknown scram", &RemoveUserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA512}},
		{"quota empty entity", quota(QuotaEntity{}, "k", 1)},
		{"quota ip with user", quota(QuotaEntity{User: Named("u"), IP: Named("1.2.3.4")}, "k", 1)},
		{"quota empty user name", quota(QuotaEntity{User: Named("")}, "k", 1)},
		{"quota default with a name", quota(QuotaEntity{User: QuotaName{Present: true, Default: true, Name: "x"}}, "k", 1)},
		{"quota name of an absent part", quota(QuotaEntity{User: Named("u"), IP: QuotaName{Name: "x"}}, "k", 1)},
		{"quota empty key", quota(userAlice, "", 1)},
		{"quota zero", quota(userAlice, "k", 0)},
		{"quota negative", quota(userAlice, "k", -5)},
		{"quota NaN", quota(userAlice, "k", nan())},
		{"quota infinite", quota(userAlice, "k", inf())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := &UnfenceBrokerRecord{ID: 0, Epoch: 1}
			next, d, err := img.Apply(img.Offset()+1, []Record{ok, tt.rec})
			if !errors.Is(err, ErrInvalidRecord) || next != nil || d != nil {
				t.Fatalf("Apply = %v, %v, %v; want ErrInvalidRecord", next, d, err)
			}
		})
	}
}

func TestSecuritySnapshotRecords(t *testing.T) {
	img := securityImage(t)
	var recs []Record
	if err := img.EachRecord(func(r Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	for _, r := range recs[len(recs)-9:] {
		kinds = append(kinds, r.Kind())
	}
	want := []Kind{KindACL, KindACL, KindScramCredential, KindScramCredential, KindScramCredential,
		KindClientQuota, KindClientQuota, KindClientQuota, KindClientQuota}
	if !slices.Equal(kinds, want) || len(recs) != img.numRecords() {
		t.Fatalf("last kinds %v (of %d, counted %d), want %v", kinds, len(recs), img.numRecords(), want)
	}
	loaded, err := ReadSnapshot(bytesReader(writeSnapshot(t, img)))
	if err != nil || !loaded.Equal(img) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	// Equal looks at the security sets too.
	other, _ := mustApply(t, img, quota(clientP, "request_percentage", 13))
	other, _ = mustApply(t, other, quota(clientP, "request_percentage", 12.5))
	other.offset = img.offset
	if !other.Equal(img) {
		t.Fatal("same quotas compare unequal")
	}
	for _, rec := range []Record{
		&RemoveAccessControlEntryRecord{ID: [16]byte{2}},
		&RemoveUserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA256},
		quota(clientP, "request_percentage", 13),
	} {
		changed, _ := mustApply(t, img, rec)
		changed.offset = img.offset
		if changed.Equal(img) {
			t.Errorf("after %v the images compare equal", rec)
		}
	}
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
