package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// A message definition file holds top-level structs separated by blank
// lines. A struct starts with a header line at column 0 ("Name => ..."),
// then one field per line, indented two spaces per nesting level. Lines
// whose text starts with "//" are comments. See the package doc for the
// parts of the grammar this parser understands.

// def is one struct: a request, a response, a named nested struct, or an
// anonymous struct inside a field.
type def struct {
	name     string
	key      int // request key; -1 when not a request
	max      int // request max version
	flexFrom int // first flexible version; -1 when never flexible
	fields   []*dfield
	pos      string // file:line of the header, for errors
}

// dfield is one field of a struct.
type dfield struct {
	name string
	minV int // first version the field exists in
	maxV int // last version; -1 when open ended
	tag  int // tag number; -1 when not tagged
	typ  *dtype
	pos  string
}

// dtype is a field's (or an array element's) type. Exactly one of prim,
// elem, anon and named is set.
type dtype struct {
	prim     string // a primitive: "int32", "string", "bytes", "uuid", ...
	nullFrom int    // strings, bytes, arrays and structs: nullable from this version; -1 never
	elem     *dtype // arrays: the element type
	varint   bool   // arrays: the length is a zigzag varint, not int32 or compact
	anon     *def   // an anonymous struct
	named    string // a struct defined elsewhere by name
}

// defs is everything parsed from a definitions directory.
type defs struct {
	structs map[string]*def // every top-level struct by name
	enums   map[string]string
	order   []*def // requests and responses in file order
}

func newDefs() *defs {
	return &defs{structs: map[string]*def{}, enums: map[string]string{}}
}

// primitives are the DSL's leaf types.
var primitives = map[string]bool{
	"bool": true, "int8": true, "int16": true, "uint16": true, "int32": true,
	"uint32": true, "int64": true, "float64": true, "uuid": true,
	"varint": true, "varlong": true,
	"string": true, "nullable-string": true, "bytes": true, "nullable-bytes": true,
	"varint-string": true, "varint-bytes": true,
}

type lineReader struct {
	file  string
	lines []string
	i     int
}

func (r *lineReader) pos() string { return fmt.Sprintf("%s:%d", r.file, r.i) }

func (r *lineReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", r.pos(), fmt.Sprintf(format, args...))
}

func readLines(file string, in io.Reader) (*lineReader, error) {
	r := &lineReader{file: file}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		r.lines = append(r.lines, strings.TrimRight(sc.Text(), " \t\r"))
	}
	return r, sc.Err()
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

func isComment(line string) bool { return strings.HasPrefix(strings.TrimLeft(line, " "), "//") }

var (
	structNameRe = regexp.MustCompile(`^[A-Z]\w*$`)
	enumHeaderRe = regexp.MustCompile(`^(\w+) (\w+) (?:camelcase )?\($`)
	versionRe    = regexp.MustCompile(`^(?:v(\d+)(?:\+|-v(\d+)))?(?:(?:, )?tag (\d+))?$`)
	specialRe    = regexp.MustCompile(`^(ThrottleMillis|TimeoutMillis)(?:\(\d+\))?(?: // v(\d+)\+)?$`)
)

// parseEnums reads the enums file: each enum is "Name type (" then values
// then ")"; only the backing type matters here.
func (d *defs) parseEnums(r *lineReader) error {
	for ; r.i < len(r.lines); r.i++ {
		line := r.lines[r.i]
		if line == "" || isComment(line) || strings.HasPrefix(line, "  ") || line == ")" {
			continue
		}
		m := enumHeaderRe.FindStringSubmatch(line)
		if m == nil {
			return r.errorf("unexpected enum line %q", line)
		}
		d.enums[m[1]] = m[2]
	}
	return nil
}

// parseFile reads one definitions file of structs.
func (d *defs) parseFile(r *lineReader) error {
	for r.i < len(r.lines) {
		line := r.lines[r.i]
		if line == "" || isComment(line) {
			r.i++
			continue
		}
		if indentOf(line) != 0 {
			return r.errorf("field outside a struct: %q", line)
		}
		s, err := parseHeader(r, line)
		if err != nil {
			return err
		}
		r.i++
		if err := d.parseFields(r, s, 2); err != nil {
			return err
		}
		if d.structs[s.name] != nil {
			return fmt.Errorf("%s: struct %s defined twice", s.pos, s.name)
		}
		d.structs[s.name] = s
		d.order = append(d.order, s)
	}
	return nil
}

// parseHeader reads "Name => modifiers".
func parseHeader(r *lineReader, line string) (*def, error) {
	s := &def{key: -1, flexFrom: -1, pos: fmt.Sprintf("%s:%d", r.file, r.i+1)}
	name, mods, ok := strings.Cut(line, " =>")
	if !ok || strings.Contains(name, " ") {
		return nil, r.errorf("bad struct header %q", line)
	}
	s.name = name
	mods = strings.TrimPrefix(mods, " ")
	if mods == "" {
		return s, nil // a response
	}
	for part := range strings.SplitSeq(mods, ", ") {
		var err error
		switch {
		case strings.HasPrefix(part, "key "):
			s.key, err = strconv.Atoi(part[len("key "):])
		case strings.HasPrefix(part, "max version "):
			s.max, err = strconv.Atoi(part[len("max version "):])
		case strings.HasPrefix(part, "flexible v") && strings.HasSuffix(part, "+"):
			s.flexFrom, err = strconv.Atoi(part[len("flexible v") : len(part)-1])
		case part == "not top level", part == "no encoding", part == "with version field",
			part == "admin", strings.HasSuffix(part, " coordinator"):
			// Routing and code generation hints: no effect on the encoding.
		default:
			return nil, r.errorf("unknown struct modifier %q", part)
		}
		if err != nil {
			return nil, r.errorf("bad struct modifier %q: %v", part, err)
		}
	}
	return s, nil
}

// parseFields reads the fields of s at the given indentation until a line
// is indented less, or a blank line ends the top-level struct.
func (d *defs) parseFields(r *lineReader, s *def, indent int) error {
	for r.i < len(r.lines) {
		line := r.lines[r.i]
		if line == "" || indentOf(line) < indent {
			return nil
		}
		if isComment(line) {
			r.i++
			continue
		}
		if indentOf(line) != indent {
			return r.errorf("bad indentation %q", line)
		}
		f, err := parseField(r, line[indent:])
		if err != nil {
			return err
		}
		r.i++
		// An anonymous struct's fields follow, one level deeper.
		if t := innermost(f.typ); t.anon != nil {
			t.anon.name = s.name + "." + f.name
			t.anon.pos = f.pos
			if err := d.parseFields(r, t.anon, indent+2); err != nil {
				return err
			}
		}
		s.fields = append(s.fields, f)
	}
	return nil
}

func innermost(t *dtype) *dtype {
	for t.elem != nil {
		t = t.elem
	}
	return t
}

// parseField reads "Name: type // versions" or a special field.
func parseField(r *lineReader, text string) (*dfield, error) {
	f := &dfield{maxV: -1, tag: -1, pos: fmt.Sprintf("%s:%d", r.file, r.i+1)}
	if m := specialRe.FindStringSubmatch(text); m != nil {
		// ThrottleMillis and TimeoutMillis: an int32, perhaps from a version.
		f.name, f.typ = m[1], &dtype{prim: "int32", nullFrom: -1}
		if m[2] != "" {
			f.minV, _ = strconv.Atoi(m[2])
		}
		return f, nil
	}
	name, typ, ok := strings.Cut(text, ": ")
	if !ok || name == "" || typ == "" {
		return nil, r.errorf("bad field %q", text)
	}
	f.name = name
	if typ, comment, ok := strings.Cut(typ, " // "); ok {
		if err := f.parseVersions(comment); err != nil {
			return nil, r.errorf("field %s: %v", name, err)
		}
		f.typ, ok = parseType(typ)
		if !ok {
			return nil, r.errorf("field %s: bad type %q", name, typ)
		}
		return f, nil
	}
	f.typ, ok = parseType(typ)
	if !ok {
		return nil, r.errorf("field %s: bad type %q", name, typ)
	}
	return f, nil
}

// parseVersions reads "v3+", "v0-v14", "tag 2", "v1+, tag 0".
func (f *dfield) parseVersions(c string) error {
	m := versionRe.FindStringSubmatch(c)
	if m == nil || c == "" {
		return fmt.Errorf("bad version comment %q", c)
	}
	if m[1] != "" {
		f.minV, _ = strconv.Atoi(m[1])
	}
	if m[2] != "" {
		f.maxV, _ = strconv.Atoi(m[2])
		if f.maxV < f.minV {
			return fmt.Errorf("version range %q is empty", c)
		}
	}
	if m[3] != "" {
		f.tag, _ = strconv.Atoi(m[3])
	}
	return nil
}

// parseType reads a type: a primitive, enum-X, nullable-string-vN+, a
// struct name, => or nullable=> (an anonymous struct whose fields follow),
// or an array of one of these: [T], nullable[T], nullable-vN+[T],
// varint[T]. An array of anonymous structs may carry a name hint, inside
// ([=>Name]) or after ([=>]Name). A trailing (default) is dropped: it does
// not change the encoding.
func parseType(s string) (*dtype, bool) {
	if open := strings.IndexByte(s, '['); open >= 0 {
		end := strings.LastIndexByte(s, ']')
		if end < open {
			return nil, false
		}
		prefix, inner, suffix := s[:open], s[open+1:end], s[end+1:]
		if suffix != "" && !strings.HasPrefix(inner, "=>") && !isDefault(suffix) {
			return nil, false
		}
		t := &dtype{nullFrom: -1}
		switch {
		case prefix == "":
		case prefix == "varint":
			t.varint = true
		case prefix == "nullable":
			t.nullFrom = 0
		case strings.HasPrefix(prefix, "nullable-v") && strings.HasSuffix(prefix, "+"):
			n, err := strconv.Atoi(prefix[len("nullable-v") : len(prefix)-1])
			if err != nil {
				return nil, false
			}
			t.nullFrom = n
		default:
			return nil, false
		}
		if strings.HasPrefix(inner, "=>") {
			t.elem = &dtype{nullFrom: -1, anon: &def{key: -1, flexFrom: -1}}
			return t, true
		}
		if strings.Contains(inner, "[") {
			return nil, false // nested arrays: not used by any definition
		}
		elem, ok := parseType(inner)
		if !ok || elem.anon != nil {
			return nil, false
		}
		t.elem = elem
		return t, true
	}
	if i := strings.IndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		s = s[:i]
	}
	switch {
	case s == "=>":
		return &dtype{nullFrom: -1, anon: &def{key: -1, flexFrom: -1}}, true
	case s == "nullable=>":
		return &dtype{nullFrom: 0, anon: &def{key: -1, flexFrom: -1}}, true
	case strings.HasPrefix(s, "nullable-string-v") && strings.HasSuffix(s, "+"):
		n, err := strconv.Atoi(s[len("nullable-string-v") : len(s)-1])
		if err != nil {
			return nil, false
		}
		return &dtype{prim: "string", nullFrom: n}, true
	case s == "nullable-string", s == "nullable-bytes":
		return &dtype{prim: strings.TrimPrefix(s, "nullable-"), nullFrom: 0}, true
	case s == "varint-string", s == "varint-bytes":
		return &dtype{prim: s, nullFrom: 0}, true
	case primitives[s]:
		return &dtype{prim: s, nullFrom: -1}, true
	case strings.HasPrefix(s, "enum-"):
		return &dtype{prim: s, nullFrom: -1}, true // resolved against the enums
	case strings.HasPrefix(s, "length-field-minus"):
		return &dtype{prim: s, nullFrom: -1}, true // rejected if a request uses it
	case structNameRe.MatchString(s):
		return &dtype{named: s, nullFrom: -1}, true
	}
	return nil, false
}

func isDefault(s string) bool { return strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") }
