package main

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // a rendering of the parsed type; "" for a parse error
	}{
		{"int32", "int32"},
		{"int64(-1)", "int64"},
		{"nullable-string", "string null@0"},
		{"nullable-string(null)", "string null@0"},
		{"nullable-string-v7+", "string null@7"},
		{"nullable-bytes", "bytes null@0"},
		{"varint-bytes", "varint-bytes null@0"},
		{"enum-ConfigSource", "enum-ConfigSource"},
		{"[int32]", "[int32]"},
		{"[int32](null)", "[int32]"},
		{"nullable[string]", "[string] null@0"},
		{"nullable-v9+[=>]", "[{}] null@9"},
		{"varint[Header]", "varint[Header]"},
		{"[=>]", "[{}]"},
		{"[=>]Entry", "[{}]"},
		{"[=>Entry]", "[{}]"},
		{"=>", "{}"},
		{"nullable=>", "{} null@0"},
		{"TaskIDs", "TaskIDs"},
		{"[[int32]]", ""},
		{"maybe[int32]", ""},
		{"[=>]Name(1)", "[{}]"},
		{"[int32]Name", ""},
		{"lowercase", ""},
	} {
		ty, ok := parseType(tc.in)
		got := ""
		if ok {
			got = render(ty)
		}
		if got != tc.want {
			t.Errorf("parseType(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func render(t *dtype) string {
	var s string
	switch {
	case t.elem != nil:
		s = "[" + render(t.elem) + "]"
		if t.varint {
			s = "varint" + s
		}
	case t.anon != nil:
		s = "{}"
	case t.named != "":
		s = t.named
	default:
		s = t.prim
	}
	if t.nullFrom >= 0 {
		s += fmt.Sprintf(" null@%d", t.nullFrom)
	}
	return s
}

const sample = `// A comment about the request.
FooRequest => key 7, max version 3, flexible v2+, admin
  // The first field.
  A: int32
  TimeoutMillis(60000) // v1+
  Items: [=>] // v1+
    // Nested.
    Name: nullable-string-v2+
    Parts: [int32]
  Extra: => // tag 0
    X: int8
  Old: int16 // v0-v1

FooResponse =>
  ThrottleMillis
  ErrorCode: int16

Shared => not top level, no encoding, flexible v0+
  Y: uuid
`

func TestParseFile(t *testing.T) {
	d := newDefs()
	r, err := readLines("sample", strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.parseFile(r); err != nil {
		t.Fatal(err)
	}
	req := d.structs["FooRequest"]
	if req == nil || req.key != 7 || req.max != 3 || req.flexFrom != 2 {
		t.Fatalf("request header: %+v", req)
	}
	var got []string
	for _, f := range req.fields {
		got = append(got, fmt.Sprintf("%s %s v%d-%d tag %d", f.name, render(f.typ), f.minV, f.maxV, f.tag))
	}
	want := []string{
		"A int32 v0--1 tag -1",
		"TimeoutMillis int32 v1--1 tag -1",
		"Items [{}] v1--1 tag -1",
		"Extra {} v0--1 tag 0",
		"Old int16 v0-1 tag -1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	items := req.fields[2].typ.elem.anon
	if len(items.fields) != 2 || items.fields[0].typ.nullFrom != 2 || items.fields[1].typ.elem.prim != "int32" {
		t.Errorf("nested struct: %+v", items.fields)
	}
	if d.structs["FooResponse"] == nil || d.structs["Shared"] == nil || len(d.structs["Shared"].fields) != 1 {
		t.Errorf("response or named struct missing: %v", d.structs)
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"FooRequest => key x, max version 1\n  A: int32\n",
		"FooRequest => key 1, max version 1, shiny\n  A: int32\n",
		"FooRequest => key 1, max version 1\n  A int32\n",
		"FooRequest => key 1, max version 1\n  A: int32 // v3-v1\n",
		"FooRequest => key 1, max version 1\n  A: int32 // sometimes\n",
		"FooRequest => key 1, max version 1\n   A: int32\n",
		"  A: int32\n",
	} {
		d := newDefs()
		r, err := readLines("bad", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.parseFile(r); err == nil {
			t.Errorf("parsed without error:\n%s", in)
		}
	}
}
