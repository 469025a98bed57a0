package auth

import (
	"maps"
	"strings"
	"testing"
)

func TestParseJAAS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []JAASModule
		err  string
	}{
		{
			in: `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice='alice "quoted"';`,
			want: []JAASModule{{Class: "org.apache.kafka.common.security.plain.PlainLoginModule", Flag: "required",
				Options: map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret", "user_alice": `alice "quoted"`}}},
		},
		{
			in: "// comment\n a.B Optional /* c */ k=v k2=\"x\\ty\\\\z\\\"\";\n b.C SUFFICIENT;",
			want: []JAASModule{
				{Class: "a.B", Flag: "optional", Options: map[string]string{"k": "v", "k2": "x\ty\\z\""}},
				{Class: "b.C", Flag: "sufficient", Options: map[string]string{}},
			},
		},
		{in: "", want: nil},
		{in: `a.B required k="v"`, err: "not terminated by semi-colon"},
		{in: `a.B required k=;`, err: "Value not specified for key 'k'"},
		{in: `a.B required k;`, err: "Value not specified for key 'k'"},
		{in: `a.B maybe;`, err: "Invalid login module control flag 'maybe'"},
		{in: `a.B ;`, err: "control flag not specified"},
		{in: `"x" required;`, err: "Login module not specified"},
		{in: `a.B required k="v" , k2="w";`, err: "not terminated by semi-colon"},
	} {
		got, err := ParseJAAS(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("%q: %+v, %v", tc.in, got, err)
		}
		for i := range got {
			if got[i].Class != tc.want[i].Class || got[i].Flag != tc.want[i].Flag || !maps.Equal(got[i].Options, tc.want[i].Options) {
				t.Errorf("%q module %d: %+v, want %+v", tc.in, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := ParseJAASOne(`a.B required; c.D required;`); err == nil || !strings.Contains(err.Error(), "contains 2 login modules") {
		t.Errorf("two modules: %v", err)
	}
}

// quoteJAAS writes a value so ParseJAAS reads it back unchanged.
func quoteJAAS(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" user_alice="a";`, "key", "value")
	f.Add("/* x */ a.B optional k='v\\n';", "user_bob", "p\"w\\")
	f.Fuzz(func(t *testing.T, cfg, key, value string) {
		ParseJAAS(cfg)
		if key == "" || strings.IndexFunc(key, func(r rune) bool { return r > 0x7f || !isJAASWord(byte(r)) }) >= 0 {
			return
		}
		m, err := ParseJAASOne("a.B required " + key + "=" + quoteJAAS(value) + ";")
		if err != nil || m.Options[key] != value {
			t.Fatalf("%q=%q read back as %q, %v", key, value, m.Options[key], err)
		}
	})
}
