package protocol

import (
	"reflect"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

var tagsType = reflect.TypeFor[kmsg.Tags]()

// unknownTag is a tag number no request defines, set on every struct of a
// filled request so its encoding carries a tag the schema must skip.
const unknownTag = 77

// fill sets every field of the struct v points to, recursively, to
// non-zero data: numbers to small non-zero values, strings and bytes to a
// few bytes, nullable fields to non-null, arrays to two elements, and the
// unknown tags to one tag. The top-level Version is left alone.
func fill(req kmsg.Request) {
	fillValue(reflect.ValueOf(req).Elem(), true, 0)
}

func fillValue(v reflect.Value, top bool, depth int) {
	if depth > 16 {
		panic("fill: request types nest deeper than expected")
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			v.Addr().Interface().(*kmsg.Tags).Set(unknownTag, []byte{0xde, 0xad})
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if top && v.Type().Field(i).Name == "Version" {
				continue
			}
			if v.Type().Field(i).IsExported() {
				fillValue(v.Field(i), false, depth+1)
			}
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(3 + depth))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(5 + depth))
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.String:
		v.SetString("ab")
	case reflect.Array: // uuids
		for i := 0; i < v.Len(); i++ {
			fillValue(v.Index(i), false, depth+1)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), false, depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte{1, 2, 3})
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fillValue(s.Index(i), false, depth+1)
		}
		v.Set(s)
	default:
		panic("fill: unexpected kind " + v.Kind().String() + " in a request type")
	}
}

// body is one request encoding under test.
type body struct {
	name         string
	key, version int16
	b            []byte
}

// kmsgBodies encodes every request kmsg knows at every version three ways:
// zero-valued, with kmsg's defaults, and filled.
func kmsgBodies() []body {
	var out []body
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		proto := kmsg.RequestForKey(key)
		if proto == nil {
			continue
		}
		for v := int16(0); v <= proto.MaxVersion(); v++ {
			zero := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(kmsg.Request)
			defaulted := kmsg.RequestForKey(key)
			filled := kmsg.RequestForKey(key)
			fill(filled)
			for _, r := range []struct {
				what string
				req  kmsg.Request
			}{{"zero", zero}, {"default", defaulted}, {"filled", filled}} {
				r.req.SetVersion(v)
				out = append(out, body{
					name: kmsg.NameForKey(key) + "/v" + strconv.Itoa(int(v)) + "/" + r.what,
					key:  key, version: v, b: r.req.AppendTo(nil),
				})
			}
		}
	}
	return out
}
