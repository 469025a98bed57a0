package auth

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"strings"
	"testing"
)

func TestPrincipalRulesValidity(t *testing.T) {
	valid := []string{
		"DEFAULT",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
		"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
		"RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
		`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`,
		`RULE:^O=a\/b$/slash\/ed/`,
		"  ",
	}
	for _, r := range valid {
		if _, err := ParsePrincipalRules(r); err != nil {
			t.Errorf("%q refused: %v", r, err)
		}
	}
	invalid := []string{
		"DEFAULT/L",
		"DEFAUL",
		"DEFAULT/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1",
		"RULE:CN=(.*?),OU=ServiceUsers.*/$1/L/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/L",
		"RULE:CN=(.*?),OU=ServiceUsers.*/U",
		"RULE:CN=(.*?),OU=ServiceUsers.*/LU",
		"RULE:(?=x)/y/",       // look-ahead: not RE2
		"RULE:^CN=(.*)$/$2/",  // no group 2
		"RULE:^CN=(.*)$/$x/",  // not a group reference
		"RULE:^CN=(.*)$/a\\/", // dangling escape ends the replacement early
		"DEFAULT,,DEFAULT",
	}
	for _, r := range invalid {
		if _, err := ParsePrincipalRules(r); err == nil {
			t.Errorf("%q accepted", r)
		}
	}
}

func TestPrincipalRulesMapping(t *testing.T) {
	rules := "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, " +
		"RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, " +
		"RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, " +
		"DEFAULT"
	pr, err := ParsePrincipalRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=Duke,OU=ServiceUsers,O=Org,C=US":        "Duke",
		"CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US": "duke@sme",
		"cn=duke,ou=sme,dc=mycp,dc=com":             "DUKE",
		"cN=duke,OU=JavaSoft,O=Sun Microsystems":    "DUKE",
		"OU=JavaSoft,O=Sun Microsystems,C=US":       "OU=JavaSoft,O=Sun Microsystems,C=US",
	} {
		if got, err := pr.Map(dn); err != nil || got != want {
			t.Errorf("Map(%q) = %q, %v; want %q", dn, got, err, want)
		}
	}

	esc, _ := ParsePrincipalRules(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`)
	if got, _ := esc.Map(`CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz`); got != `Tkac\, Adam` {
		t.Errorf("escaped comma: %q", got)
	}
	dollar, _ := ParsePrincipalRules(`RULE:^CN=(.*)$/\$$1/`)
	if got, _ := dollar.Map("CN=x"); got != "$x" {
		t.Errorf("literal dollar: %q", got)
	}
	twelve, _ := ParsePrincipalRules(`RULE:^(a)$/$12/`)
	if got, _ := twelve.Map("a"); got != "a2" {
		t.Errorf("$12 with one group: %q, want Java's a2", got)
	}

	none, _ := ParsePrincipalRules("RULE:^CN=(.*),OU=x$/$1/")
	if _, err := none.Map("CN=a,OU=y"); !errors.Is(err, ErrNoMatchingRule) {
		t.Errorf("no rule applies: %v", err)
	}
	def, _ := ParsePrincipalRules("")
	if got, _ := def.Map("CN=a"); got != "CN=a" {
		t.Errorf("empty rules: %q, want DEFAULT", got)
	}
}

func TestCertificateDN(t *testing.T) {
	email := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}
	uid := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}
	dc := asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}
	subject := pkix.RDNSequence{
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 6}, Value: "US"}},
		{{Type: dc, Value: "example"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "Acme, Inc"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "eng"}, {Type: uid, Value: "u1"}},
		{{Type: email, Value: "a@b"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: " #alice+bob "}},
	}
	raw, err := asn1.Marshal(subject)
	if err != nil {
		t.Fatal(err)
	}
	got, err := CertificateDN(&x509.Certificate{RawSubject: raw})
	if err != nil {
		t.Fatal(err)
	}
	want := `CN=\ #alice\+bob\ ,1.2.840.113549.1.9.1=#0C03614062,OU=eng+UID=u1,O=Acme\, Inc,DC=example,C=US`
	if got != want {
		t.Fatalf("DN\n got %s\nwant %s", got, want)
	}
	if _, err := CertificateDN(&x509.Certificate{RawSubject: []byte{0x30, 0x05}}); err == nil {
		t.Fatal("truncated subject accepted")
	}
	if !strings.HasPrefix(want, "CN=") {
		t.Fatal("most specific first")
	}
}

func FuzzPrincipalRules(f *testing.F) {
	f.Add("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT", "CN=Duke,OU=ServiceUsers,O=Org,C=US")
	f.Add(`RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT`, `CN=Tkac\, Adam,OU=ITZ`)
	f.Add("RULE:(a)(b)/$2$1$12\\$/U", "ab")
	f.Add("DEFAULT", "")
	f.Fuzz(func(t *testing.T, rules, dn string) {
		pr, err := ParsePrincipalRules(rules)
		if err != nil {
			return
		}
		name, err := pr.Map(dn)
		if err != nil && !errors.Is(err, ErrNoMatchingRule) {
			t.Fatalf("Map: %v", err)
		}
		if err == nil && pr.rules[0].isDefault && name != dn {
			t.Fatalf("DEFAULT first mapped %q to %q", dn, name)
		}
	})
}
