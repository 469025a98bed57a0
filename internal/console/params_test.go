package console

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParams(t *testing.T) {
	q := func(s string) params {
		v, err := url.ParseQuery(s)
		if err != nil {
			t.Fatal(err)
		}
		return params{v}
	}
	long := strings.Repeat("a", 250)
	for _, tc := range []struct {
		name    string
		run     func() error
		wantErr string // "" for none
	}{
		{"topic ok", func() error { _, err := q("t=ord.ers_-1").topic("t"); return err }, ""},
		{"topic empty", func() error { _, err := q("t=").topic("t"); return err }, "a topic name is required"},
		{"topic slash", func() error { _, err := q("t=a/b").topic("t"); return err }, "only letters, digits"},
		{"topic dots", func() error { _, err := q("t=..").topic("t"); return err }, `"." and ".."`},
		{"topic long", func() error { _, err := q("t=" + long).topic("t"); return err }, "at most 249"},
		{"group spaces ok", func() error { _, err := q("g=my+group").group("g"); return err }, ""},
		{"group control", func() error { _, err := q("g=a%00b").group("g"); return err }, "control characters"},
		{"group blank", func() error { _, err := q("g=+++").group("g"); return err }, "required"},
		{"int ok", func() error { _, err := q("n=12").integer("n", 0, 20, nil); return err }, ""},
		{"int words", func() error { _, err := q("n=twelve").integer("n", 0, 20, nil); return err }, "not a whole number"},
		{"int range", func() error { _, err := q("n=21").integer("n", 0, 20, nil); return err }, "want 0 to 20"},
		{"int huge", func() error { _, err := q("n=99999999999999999999").integer("n", 0, 20, nil); return err }, "out of range"},
		{"ints dup", func() error { _, err := q("p=1,2,1").ints("p", 0, 9, 10); return err }, "listed twice"},
		{"ints neg", func() error { _, err := q("p=-1").ints("p", 0, 9, 10); return err }, "out of range"},
		{"ints many", func() error { _, err := q("p=1,2,3").ints("p", 0, 9, 2); return err }, "at most 2"},
		{"time ms", func() error { _, err := q("t=1700000000000").timestamp("t"); return err }, ""},
		{"time rfc3339", func() error { _, err := q("t=2026-01-02T15:04:05Z").timestamp("t"); return err }, ""},
		{"time local", func() error { _, err := q("t=2026-01-02T15:04").timestamp("t"); return err }, ""},
		{"time junk", func() error { _, err := q("t=yesterday").timestamp("t"); return err }, "not a time"},
		{"lines ok", func() error { _, err := q("c=a%3D1%0Ab%3D2").lines("c", 5); return err }, ""},
		{"lines no =", func() error { _, err := q("c=a").lines("c", 5); return err }, "name=value"},
		{"lines dup", func() error { _, err := q("c=a%3D1%0Aa%3D2").lines("c", 5); return err }, "given twice"},
		{"oneOf", func() error { _, err := q("f=xml").oneOf("f", "auto", "hex"); return err }, "want one of auto, hex"},
		{"reset offset", func() error { _, err := q("to=offset&value=5").resetTarget(); return err }, ""},
		{"reset offset missing", func() error { _, err := q("to=offset").resetTarget(); return err }, "a number is required"},
		{"reset shift neg", func() error { _, err := q("to=shift&value=-5").resetTarget(); return err }, ""},
		{"reset kind", func() error { _, err := q("to=sideways").resetTarget(); return err }, "want one of"},
		{"moves ok", func() error { _, err := q("m=0%3A+1%2C2%0A1%3A+cancel").moves("m"); return err }, ""},
		{"moves empty", func() error { _, err := q("m=").moves("m"); return err }, "at least one line"},
		{"moves no colon", func() error { _, err := q("m=0+1%2C2").moves("m"); return err }, "each line is partition"},
		{"moves dup replica", func() error { _, err := q("m=0%3A1%2C1").moves("m"); return err }, "listed twice"},
		{"moves dup partition", func() error { _, err := q("m=0%3A1%0A0%3A2").moves("m"); return err }, "given twice"},
		{"config name", func() error { return configName("c", "retention ms") }, "only letters"},
	} {
		err := tc.run()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.wantErr)
		}
		var pe *ParamError
		if err != nil && !errors.As(err, &pe) {
			t.Errorf("%s: %T is not a ParamError", tc.name, err)
		}
	}
}

// FuzzParams: no parameter, however hostile, panics a parser; each
// either fails with a ParamError naming the parameter in valid UTF-8 or
// returns a value within its limits.
func FuzzParams(f *testing.F) {
	for _, s := range []string{"name=orders&partition=0&offset=5", "to=shift&value=-3", "m=0:1,2,3%0A1:cancel",
		"t=2026-01-02T15:04:05Z", "c=a=1%0Ab=2", "p=1,2,3", "name=%ff%fe", "g=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		p := params{v}
		check := func(what string, err error) {
			if err == nil {
				return
			}
			var pe *ParamError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %T %v is not a ParamError", what, err, err)
			}
			if msg := err.Error(); !utf8.ValidString(msg) || !strings.Contains(msg, pe.Param) {
				t.Fatalf("%s: message %q", what, msg)
			}
		}
		for _, k := range []string{"name", "t", "g", "p", "m", "c", "to", "value", "partition", "offset"} {
			if s, err := p.topic(k); err == nil && (s == "" || len(s) > maxTopicName) {
				t.Fatalf("topic %q accepted", s)
			} else {
				check("topic", err)
			}
			_, err := p.group(k)
			check("group", err)
			if n, err := p.integer(k, -5, 5, nil); err == nil && (n < -5 || n > 5) {
				t.Fatalf("integer %d accepted", n)
			} else {
				check("integer", err)
			}
			if ns, err := p.ints(k, 0, 9, 4); err == nil && len(ns) > 4 {
				t.Fatalf("%d ints accepted", len(ns))
			} else {
				check("ints", err)
			}
			_, err = p.timestamp(k)
			check("timestamp", err)
			if ls, err := p.lines(k, 3); err == nil && len(ls) > 3 {
				t.Fatalf("%d lines accepted", len(ls))
			} else {
				check("lines", err)
			}
			if ms, err := p.moves(k); err == nil && len(ms) == 0 {
				t.Fatal("no moves accepted")
			} else {
				check("moves", err)
			}
		}
		_, err = p.resetTarget()
		check("resetTarget", err)
		_, err = viewKeyOf(v, "")
		check("viewKeyOf", err)
	})
}
