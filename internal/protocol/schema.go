package protocol

//go:generate go run ./gen -defs ${WEIR_KMSG_DEFINITIONS} -out schema_gen.go

// The request schemas are three generated tables (schema_gen.go):
//
//   - requests, indexed by API key: the root struct, the highest version
//     and the first flexible version of each request kmsg knows;
//   - structs: a struct is a run fields[first:end], its untagged fields in
//     wire order, then its tagged fields from fields[tagged:end];
//   - fields: one entry per field, plus one per array element type (an
//     array's ref names its element entry).
//
// A field is on the wire in versions minV..maxV of the request it belongs
// to, however deeply nested: the DSL bounds nested fields by the top-level
// version, as kmsg does.

// kind is how a field is encoded.
type kind uint8

const (
	kindFixed          kind = iota // size bytes: bool, intN, uintN, float64, uuid
	kindVarint                     // zigzag varint, at most 5 bytes
	kindVarlong                    // zigzag varlong, at most 10 bytes
	kindString                     // int16 length (compact: uvarint length+1), then bytes
	kindBytes                      // int32 length (compact: uvarint length+1), then bytes
	kindVarintBytes                // zigzag varint length, then bytes; -1 is null
	kindArray                      // int32 count (compact: uvarint count+1), then elements
	kindVarintArray                // zigzag varint count, then elements
	kindStruct                     // the struct's fields, then its tags when flexible
	kindNullableStruct             // int8 -1 (null) or 1, then the struct
)

// noVersion marks a version bound that is never reached: nullFrom of a
// field that is never nullable, flexFrom of a request never flexible.
const noVersion = 1<<15 - 1

// field describes one field or array element type.
type field struct {
	kind     kind
	size     uint8  // kindFixed: the byte width
	minV     int16  // first version with the field
	maxV     int16  // last version with the field
	nullFrom int16  // strings, bytes, arrays: null is allowed from this version on
	tag      int16  // the tag number of a tagged field, else -1
	ref      uint16 // arrays: index of the element entry in fields; structs: index in structs
}

// structDef is a struct's run of fields.
type structDef struct {
	first, tagged, end uint16
}

// message is one request's schema.
type message struct {
	root     uint16 // index in structs
	max      int16  // highest version; -1 when the key is not a request kmsg knows
	flexFrom int16  // first flexible version, or noVersion
}

func (f *field) in(v int16) bool { return f.minV <= v && v <= f.maxV }
