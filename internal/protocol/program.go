package protocol

import "sync"

// A program is a request's schema at one version, flattened for the
// walker: fields absent at the version are gone, runs of fixed-width fields
// are one skip, and arrays of fixed-width structs skip all their elements
// at once. Programs are compiled from the generated tables the first time
// a key is checked, all its versions at once, and never change after.

type opcode uint8

const (
	opEnd            opcode = iota // the end of a struct with no tag section
	opTags                         // a tag section; the struct's n tagged fields follow, then the struct ends
	opSkip                         // n fixed bytes
	opVarint                       // a zigzag varint
	opVarlong                      // a zigzag varlong
	opString                       // int16 or compact length, then bytes
	opBytes                        // int32 or compact length, then bytes
	opVarintBytes                  // zigzag varint length, then bytes; -1 is null
	opArray                        // int32 or compact count, then elements
	opVarintArray                  // zigzag varint count, then elements
	opStruct                       // the struct program at body
	opNullableStruct               // int8 -1 (null) or 1, then the struct program at body
)

// op is one step of a program.
type op struct {
	code opcode
	null bool   // strings, bytes, arrays: null is allowed at this version
	n    uint32 // opSkip: bytes; opTags: tagged fields that follow; arrays: element width if fixed, else 0
	min  uint32 // arrays: the fewest bytes an element can take
	body uint32 // structs, and arrays whose elements are not fixed: where the struct or element program starts
	tag  uint32 // a tagged field (after an opTags): its tag
}

// program holds every version of one request.
type program struct {
	ops   []op
	roots []uint32 // by version: where the request's struct program starts
}

var programs [len(requests)]struct {
	once sync.Once
	p    program
}

// programFor returns the program of a key in the table, compiling it on
// first use.
func programFor(key int16) *program {
	e := &programs[key]
	e.once.Do(func() { e.p = compile(&requests[key]) })
	return &e.p
}

func compile(m *message) program {
	var p program
	for v := int16(0); v <= m.max; v++ {
		c := compiler{ops: p.ops, v: v, flex: v >= m.flexFrom, done: map[uint16]uint32{}}
		p.roots = append(p.roots, c.structure(m.root))
		p.ops = c.ops
	}
	return p
}

type compiler struct {
	ops  []op
	v    int16
	flex bool
	done map[uint16]uint32 // structs compiled at this version: index in structs -> program start
}

// structure compiles a struct after the structs it contains, so its own
// program is contiguous, and returns where it starts.
func (c *compiler) structure(si uint16) uint32 {
	if start, ok := c.done[si]; ok {
		return start
	}
	s := &structs[si]
	var local []op
	for i := s.first; i < s.tagged; i++ {
		f := &fields[i]
		if !f.in(c.v) {
			continue
		}
		o := c.field(f)
		if n := len(local); o.code == opSkip && n > 0 && local[n-1].code == opSkip {
			local[n-1].n += o.n
			continue
		}
		local = append(local, o)
	}
	if c.flex {
		var tagged []op
		for i := s.tagged; i < s.end; i++ {
			if f := &fields[i]; f.in(c.v) {
				o := c.field(f)
				o.tag = uint32(f.tag)
				tagged = append(tagged, o)
			}
		}
		local = append(local, op{code: opTags, n: uint32(len(tagged))})
		local = append(local, tagged...)
	} else {
		local = append(local, op{code: opEnd})
	}
	start := uint32(len(c.ops))
	c.ops = append(c.ops, local...)
	c.done[si] = start
	return start
}

func (c *compiler) field(f *field) op {
	o := op{null: c.v >= f.nullFrom}
	switch f.kind {
	case kindFixed:
		o.code, o.n = opSkip, uint32(f.size)
	case kindVarint:
		o.code = opVarint
	case kindVarlong:
		o.code = opVarlong
	case kindString:
		o.code = opString
	case kindBytes:
		o.code = opBytes
	case kindVarintBytes:
		o.code = opVarintBytes
	case kindStruct:
		o.code, o.body = opStruct, c.structure(f.ref)
	case kindNullableStruct:
		o.code, o.body = opNullableStruct, c.structure(f.ref)
	case kindArray, kindVarintArray:
		o.code = opArray
		if f.kind == kindVarintArray {
			o.code = opVarintArray
		}
		elem := &fields[f.ref]
		switch elem.kind {
		case kindFixed:
			o.n = uint32(elem.size)
			o.min = o.n
			return o
		case kindStruct:
			o.body = c.structure(elem.ref)
			if first := c.ops[o.body]; first.code == opSkip && c.ops[o.body+1].code == opEnd {
				o.n = first.n // every element is the same fixed width
			}
		default:
			e := c.field(elem)
			o.body = uint32(len(c.ops))
			c.ops = append(c.ops, e, op{code: opEnd})
		}
		o.min = c.minSize(o.body)
	}
	return o
}

// minSize is the fewest bytes the struct program at pc can take: every
// length and count at its smallest, every nullable struct null, no tags.
func (c *compiler) minSize(pc uint32) uint32 {
	var size uint32
	for ; ; pc++ {
		switch o := &c.ops[pc]; o.code {
		case opEnd:
			return size
		case opTags:
			return size + 1 // the count
		case opSkip:
			size += o.n
		case opStruct:
			size += c.minSize(o.body)
		case opString:
			size += c.lengthSize(2)
		case opBytes, opArray:
			size += c.lengthSize(4)
		default: // varints, varint lengths and counts, nullable-struct markers
			size++
		}
	}
}

// lengthSize is the smallest encoding of a length or count: one uvarint
// byte when flexible, else its fixed width.
func (c *compiler) lengthSize(fixed uint32) uint32 {
	if c.flex {
		return 1
	}
	return fixed
}
