package main

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
)

// entry mirrors protocol.field, plus a name for the generated comment.
type entry struct {
	kind     string
	size     int
	minV     int
	maxV     int // -1: open
	nullFrom int // -1: never
	tag      int
	ref      int
	name     string
}

type structEntry struct {
	first, tagged, end int
	name               string
}

type request struct {
	key, max, flexFrom int // flexFrom -1: never
	root               int
	name               string
}

// table is the generated schema being built.
type table struct {
	d        *defs
	fields   []entry
	structs  []structEntry
	requests []request
	named    map[string]int // struct index of named structs already emitted
	elems    map[string]int // field index of primitive element entries
}

func newTable(d *defs) *table {
	return &table{d: d, named: map[string]int{}, elems: map[string]int{}}
}

// fixedWidths are the primitives of a known width.
var fixedWidths = map[string]int{
	"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4,
	"int64": 8, "float64": 8, "uuid": 16,
}

// addRequest emits a request's struct tree, capped at version max.
func (t *table) addRequest(s *def, max int) error {
	root, err := t.addStruct(s, strings.TrimSuffix(s.name, "Request"))
	if err != nil {
		return err
	}
	t.requests = append(t.requests, request{key: s.key, max: max, flexFrom: s.flexFrom, root: root, name: s.name})
	return nil
}

// addStruct emits s's fields as one run, after any struct they contain,
// and returns its index in structs.
func (t *table) addStruct(s *def, path string) (int, error) {
	var plain, tagged []entry
	tags := map[int]bool{}
	for _, f := range s.fields {
		e, err := t.typeEntry(f.typ, path+"."+f.name)
		if err != nil {
			return 0, fmt.Errorf("%s: field %s: %w", f.pos, f.name, err)
		}
		e.minV, e.maxV, e.tag = f.minV, f.maxV, f.tag
		if f.tag < 0 {
			plain = append(plain, e)
			continue
		}
		if tags[f.tag] {
			return 0, fmt.Errorf("%s: tag %d used twice in %s", f.pos, f.tag, s.name)
		}
		tags[f.tag] = true
		tagged = append(tagged, e)
	}
	first := len(t.fields)
	t.fields = append(t.fields, plain...)
	t.fields = append(t.fields, tagged...)
	t.structs = append(t.structs, structEntry{first: first, tagged: first + len(plain), end: len(t.fields), name: path})
	return len(t.structs) - 1, nil
}

// typeEntry describes a type; the caller sets the versions and tag.
func (t *table) typeEntry(ty *dtype, path string) (entry, error) {
	e := entry{nullFrom: ty.nullFrom, tag: -1, maxV: -1, name: path}
	switch {
	case ty.elem != nil:
		e.kind = "kindArray"
		if ty.varint {
			e.kind = "kindVarintArray"
		}
		ref, err := t.element(ty.elem, path)
		if err != nil {
			return e, err
		}
		e.ref = ref
	case ty.anon != nil:
		ref, err := t.addStruct(ty.anon, path)
		if err != nil {
			return e, err
		}
		e.kind, e.ref = structKind(ty), ref
	case ty.named != "":
		ref, ok := t.named[ty.named]
		if !ok {
			s := t.d.structs[ty.named]
			if s == nil {
				return e, fmt.Errorf("unknown type %q", ty.named)
			}
			var err error
			if ref, err = t.addStruct(s, s.name); err != nil {
				return e, err
			}
			t.named[ty.named] = ref
		}
		e.kind, e.ref = structKind(ty), ref
	default:
		kind, size, err := t.primitive(ty.prim)
		if err != nil {
			return e, err
		}
		e.kind, e.size = kind, size
	}
	return e, nil
}

func structKind(ty *dtype) string {
	if ty.nullFrom >= 0 {
		return "kindNullableStruct"
	}
	return "kindStruct"
}

func (t *table) primitive(p string) (string, int, error) {
	if name, ok := strings.CutPrefix(p, "enum-"); ok {
		backing, ok := t.d.enums[name]
		if !ok {
			return "", 0, fmt.Errorf("unknown enum %q", name)
		}
		if _, ok := fixedWidths[backing]; !ok {
			return "", 0, fmt.Errorf("enum %q has unsupported type %q", name, backing)
		}
		p = backing
	}
	if w, ok := fixedWidths[p]; ok {
		return "kindFixed", w, nil
	}
	switch p {
	case "varint":
		return "kindVarint", 0, nil
	case "varlong":
		return "kindVarlong", 0, nil
	case "string":
		return "kindString", 0, nil
	case "bytes":
		return "kindBytes", 0, nil
	case "varint-string", "varint-bytes":
		return "kindVarintBytes", 0, nil
	}
	return "", 0, fmt.Errorf("type %q cannot appear in a request", p)
}

// element emits an array's element entry and returns its index in fields.
// Entries of primitive elements are shared.
func (t *table) element(ty *dtype, path string) (int, error) {
	e, err := t.typeEntry(ty, path+"[]")
	if err != nil {
		return 0, err
	}
	e.maxV = -1
	key := ""
	if e.kind != "kindStruct" && e.kind != "kindNullableStruct" && e.kind != "kindArray" && e.kind != "kindVarintArray" {
		key = fmt.Sprint(e.kind, e.size, e.nullFrom)
		if i, ok := t.elems[key]; ok {
			return i, nil
		}
		e.name = "element: " + strings.TrimPrefix(e.kind, "kind")
		if e.size > 0 {
			e.name += fmt.Sprint(e.size)
		}
		if e.nullFrom >= 0 {
			e.name += ", nullable"
		}
	}
	t.fields = append(t.fields, e)
	if key != "" {
		t.elems[key] = len(t.fields) - 1
	}
	return len(t.fields) - 1, nil
}

func version(v int) string {
	if v < 0 {
		return "noVersion"
	}
	return fmt.Sprint(v)
}

// source renders schema_gen.go.
func (t *table) source(header string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by \"go run ./gen\"; DO NOT EDIT.\n\n")
	for line := range strings.SplitSeq(strings.TrimSpace(header), "\n") {
		fmt.Fprintf(&b, "// %s\n", line)
	}
	fmt.Fprintf(&b, "\npackage protocol\n\n")
	maxKey := 0
	byKey := map[int]request{}
	for _, r := range t.requests {
		byKey[r.key] = r
		maxKey = max(maxKey, r.key)
	}
	fmt.Fprintf(&b, "// requests is indexed by API key: root struct, max version, first flexible version.\n")
	fmt.Fprintf(&b, "var requests = [%d]message{\n", maxKey+1)
	for key := 0; key <= maxKey; key++ {
		r, ok := byKey[key]
		if !ok {
			fmt.Fprintf(&b, "\t{0, -1, noVersion}, // %d: not a request kmsg knows\n", key)
			continue
		}
		fmt.Fprintf(&b, "\t{%d, %d, %s}, // %d: %s\n", r.root, r.max, version(r.flexFrom), key, r.name)
	}
	fmt.Fprintf(&b, "}\n\n")
	fmt.Fprintf(&b, "// structs: first field, first tagged field, end.\n")
	fmt.Fprintf(&b, "var structs = [%d]structDef{\n", len(t.structs))
	for i, s := range t.structs {
		fmt.Fprintf(&b, "\t{%d, %d, %d}, // %d: %s\n", s.first, s.tagged, s.end, i, s.name)
	}
	fmt.Fprintf(&b, "}\n\n")
	fmt.Fprintf(&b, "// fields: kind, size, min version, max version, nullable from, tag, ref.\n")
	fmt.Fprintf(&b, "var fields = [%d]field{\n", len(t.fields))
	for i, f := range t.fields {
		fmt.Fprintf(&b, "\t{%s, %d, %d, %s, %s, %d, %d}, // %d: %s\n",
			f.kind, f.size, f.minV, version(f.maxV), version(f.nullFrom), f.tag, f.ref, i, f.name)
	}
	fmt.Fprintf(&b, "}\n")
	return format.Source(b.Bytes())
}
