package config

import (
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// escapeProperty writes key and value so that ParseProperties reads them
// back unchanged: the inverse the parser must have.
func escapeProperty(key, value string) string {
	var b strings.Builder
	esc := func(s string, isKey bool) {
		for i, r := range s {
			switch {
			case r == '\\':
				b.WriteString(`\\`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\f':
				b.WriteString(`\f`)
			case r == ' ' && (isKey || i == 0):
				b.WriteString(`\ `)
			case (r == '=' || r == ':') && isKey:
				b.WriteByte('\\')
				b.WriteRune(r)
			case (r == '#' || r == '!') && isKey && i == 0:
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r)
			}
		}
	}
	esc(key, true)
	b.WriteByte('=')
	esc(value, false)
	b.WriteByte('\n')
	return b.String()
}

func FuzzParseProperties(f *testing.F) {
	f.Add([]byte(sampleProperties), "k", "v")
	f.Add([]byte("a=1\\\n  2\r\nb:\\u0041\n#c\n!d\n  e f\n"), "key with = and :", " leading space")
	f.Add([]byte("x=\\u12"), "#hash", "trailing\\")
	f.Add([]byte("\\\n\\\\\n=\n:\n"), "", "")
	f.Fuzz(func(t *testing.T, data []byte, key, value string) {
		p, err := ParseProperties("fuzz.properties", data)
		if err == nil {
			for _, e := range p.Entries {
				if e.Line < 1 {
					t.Fatalf("entry %q has line %d", e.Key, e.Line)
				}
			}
			_, _, _ = LoadBroker(p) // must not panic, whatever the keys
		}
		// Round trip: an escaped entry reads back as written.
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			return
		}
		p, err = ParseProperties("rt", []byte(escapeProperty(key, value)))
		if err != nil {
			t.Fatalf("escaped entry %q=%q does not parse: %v", key, value, err)
		}
		if key == "" && value == "" {
			return // "=" alone is an entry with an empty key; covered above
		}
		if len(p.Entries) != 1 || p.Entries[0].Key != key || p.Entries[0].Value != value {
			t.Fatalf("round trip of %q=%q gave %+v", key, value, p.Entries)
		}
	})
}

// FuzzValue parses arbitrary text as every topic and broker config: no
// panics, and an accepted value's printed form parses to itself.
func FuzzValue(f *testing.F) {
	for _, s := range []string{"", "0", "-1", " 42 ", "9223372036854775807", "1e-5", "NaN", "-Infinity", "0.5d",
		"true", "FALSE", "delete,compact", "a, ,b", "*", "0:1,1:2", "CreateTime", "PLAINTEXT://:9092", "\x00", "\u00e9"} {
		f.Add(s)
	}
	defs := append(append([]*Def{}, topicDefs.list...), brokerDefs.list...)
	f.Fuzz(func(t *testing.T, raw string) {
		for _, d := range defs {
			v, msg := d.parse(raw)
			if msg != "" {
				if !strings.Contains(msg, d.Name) {
					t.Fatalf("%s: message %q does not name the key", d.Name, msg)
				}
				continue
			}
			again, msg := d.parse(v.String())
			if msg != "" || again.String() != v.String() {
				t.Fatalf("%s: %q printed as %q, which parses to %q (%s)", d.Name, raw, v.String(), again.String(), msg)
			}
		}
	})
}

// FuzzIncrementalAlter applies arbitrary ops to topic and broker
// resources: no panics, inputs untouched, and whatever is accepted
// validates and describes.
func FuzzIncrementalAlter(f *testing.F) {
	f.Add("cleanup.policy", byte(2), "compact", "retention.ms", byte(0), "1000")
	f.Add("cleanup.policy", byte(3), "delete,", "segment.bytes", byte(0), "1")
	f.Add("log.cleanup.policy", byte(2), ",compact", "message.max.bytes", byte(1), "")
	f.Add("leader.replication.throttled.replicas", byte(2), "*", "x", byte(9), "y")
	b, _ := mustBroker(f, nil).WithDynamic(map[string]string{"log.retention.bytes": "5"}, nil)
	f.Fuzz(func(t *testing.T, n1 string, o1 byte, v1 string, n2 string, o2 byte, v2 string) {
		ops := []IncrementalOp{op(n1, opOf(o1), &v1), op(n2, opOf(o2), &v2)}
		current := map[string]string{CleanupPolicy: "delete", RetentionMs: "10"}
		before := maps.Clone(current)
		if next, e := b.IncrementalAlterTopic(current, ops); e == nil {
			if e := b.ValidateTopicOverrides(next); e != nil {
				t.Fatalf("accepted topic overrides do not validate: %v", e)
			}
			if _, e := b.DescribeTopic(next, DescribeOptions{IncludeSynonyms: true}); e != nil {
				t.Fatalf("accepted topic overrides do not describe: %v", e)
			}
			if _, err := b.Topic(next); err != nil {
				t.Fatal(err)
			}
		} else if e.Code == 0 || e.Message == "" {
			t.Fatalf("error without code or message: %+v", e)
		}
		if !maps.Equal(before, current) {
			t.Fatal("current overrides modified")
		}
		for _, res := range []string{"", "1"} {
			next, e := b.IncrementalAlterBroker(res, ops)
			if e != nil {
				continue
			}
			clusterDefault, node := b.DynamicConfigs(false), b.DynamicConfigs(true)
			if res == "" {
				clusterDefault = next
			} else {
				node = next
			}
			nb, dropped := b.WithDynamic(clusterDefault, node)
			if len(dropped) > 0 {
				t.Fatalf("accepted broker overrides dropped on reload: %q", dropped)
			}
			if _, e := nb.DescribeBroker(res, DescribeOptions{IncludeSynonyms: true}); e != nil {
				t.Fatal(e)
			}
		}
	})
}

// opOf maps a fuzz byte onto the four ops and, rarely, an unknown one.
func opOf(b byte) kmsg.IncrementalAlterConfigOp {
	if b%16 == 15 {
		return kmsg.IncrementalAlterConfigOp(b)
	}
	return kmsg.IncrementalAlterConfigOp(b % 4)
}
