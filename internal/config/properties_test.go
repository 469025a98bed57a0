package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Property
	}{
		{"equals", "a=b", []Property{{"a", "b", 1}}},
		{"colon", "a: b", []Property{{"a", "b", 1}}},
		{"blank separator", "a   b c", []Property{{"a", "b c", 1}}},
		{"blanks around equals", "  a \t=\f b", []Property{{"a", "b", 1}}},
		{"trailing blanks kept", "a=b  ", []Property{{"a", "b  ", 1}}},
		{"no value", "a", []Property{{"a", "", 1}}},
		{"empty value", "a=", []Property{{"a", "", 1}}},
		{"second separator is value", "a==b", []Property{{"a", "=b", 1}}},
		{"colon then equals", "a:=b", []Property{{"a", "=b", 1}}},
		{"comments", "# c\n! c\n  # indented\na=1", []Property{{"a", "1", 4}}},
		{"comment char inside value", "a=b#c", []Property{{"a", "b#c", 1}}},
		{"blank lines", "\n\n  \t\na=1\n\n", []Property{{"a", "1", 4}}},
		{"crlf", "a=1\r\nb=2\rc=3\n", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=one,\\\n    two,\\\n three", []Property{{"a", "one,two,three", 1}}},
		{"continuation crlf", "a=x\\\r\n  y", []Property{{"a", "xy", 1}}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", []Property{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"comment does not continue", "# c \\\na=1", []Property{{"a", "1", 2}}},
		{"continued line starting with hash", "a=1\\\n#2", []Property{{"a", "1#2", 1}}},
		{"backslash at end of file", "a=1\\", []Property{{"a", "1", 1}}},
		{"escaped separator in key", `a\=b\:c\ d=v`, []Property{{"a=b:c d", "v", 1}}},
		{"escapes", `a=\t\n\r\f\\\q`, []Property{{"a", "\t\n\r\f\\q", 1}}},
		{"unicode escape", `k\u00e9=caf\u00E9`, []Property{{"k\u00e9", "caf\u00e9", 1}}},
		{"surrogate pair", `a=\uD83D\uDE00`, []Property{{"a", "\U0001F600", 1}}},
		{"lone surrogate", `a=\uD83Dx`, []Property{{"a", "\uFFFDx", 1}}},
		{"utf8 text", "dir=/data/caf\u00e9", []Property{{"dir", "/data/caf\u00e9", 1}}},
		{"duplicates kept in order", "a=1\na=2", []Property{{"a", "1", 1}, {"a", "2", 2}}},
		{"empty input", "", nil},
		{"only comments", "#a\n!b", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseProperties("server.properties", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Entries, tt.want) {
				t.Fatalf("got %+v, want %+v", p.Entries, tt.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"a=1\nb=\\u12", `server.properties:2: b: malformed \uxxxx encoding`},
		{"a=\\uZZZZ", `server.properties:1: a: malformed \uxxxx encoding`},
		{"\\u00=1", `server.properties:1: malformed \uxxxx encoding`},
		{"a=1\nb=\xff\xfe", `server.properties:2: invalid UTF-8`},
	}
	for _, tt := range tests {
		_, err := ParseProperties("server.properties", []byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseProperties(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

func TestPropertiesAccessors(t *testing.T) {
	p, err := ParseProperties("f", []byte("a=1\nb=2\na=3"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := p.Get("a"); !ok || v != "3" {
		t.Fatalf("Get(a) = %q, %v; the last entry wins", v, ok)
	}
	if p.lineOf("a") != 3 || p.lineOf("b") != 2 || p.lineOf("zz") != 0 {
		t.Fatal("lineOf does not point at the last entry")
	}
	p.SetDefault("b", "9")
	p.SetDefault("c", "4")
	p.Set("a", "5")
	if got := p.Map(); !reflect.DeepEqual(got, map[string]string{"a": "5", "b": "2", "c": "4"}) {
		t.Fatalf("Map = %v", got)
	}
	if p.lineOf("a") != 0 {
		t.Fatal("a flag override should have no line")
	}
}

const sampleProperties = `# weir broker
node.id=3
listeners=PLAINTEXT://127.0.0.1:19092
log.dirs=/var/lib/weir/a,\
         /var/lib/weir/b
log.retention.hours=24
num.partitions = 6
auto.create.topics.enable: false
group.initial.rebalance.delay.ms=0
broker.rack=r1
ssl.keymanager.algorithm=SunX509
`

func TestLoadBroker(t *testing.T) {
	p, err := ParseProperties("server.properties", []byte(sampleProperties))
	if err != nil {
		t.Fatal(err)
	}
	b, warns, err := LoadBroker(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || warns[0].Key != "ssl.keymanager.algorithm" || warns[0].Line != 11 {
		t.Fatalf("warnings = %+v", warns)
	}
	if got := warns[0].String(); got != "server.properties:11: ssl.keymanager.algorithm is not a known broker config and is ignored" {
		t.Fatalf("warning text = %q", got)
	}
	if b.NodeID() != 3 || b.Int(NumPartitions) != 6 || b.Bool(AutoCreateTopics) || b.Rack() != "r1" {
		t.Fatal("typed values do not match the file")
	}
	if got := b.LogDirs(); !reflect.DeepEqual(got, []string{"/var/lib/weir/a", "/var/lib/weir/b"}) {
		t.Fatalf("LogDirs = %q", got)
	}
	if got := b.Millis(GroupInitialRebalance); got != 0 {
		t.Fatalf("group.initial.rebalance.delay.ms = %v", got)
	}
	topic, err := b.Topic(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := topic.LogConfig().RetentionTime.Hours(); got != 24 {
		t.Fatalf("retention from log.retention.hours = %vh", got)
	}
}

func TestLoadBrokerErrorsNameFileLineAndKey(t *testing.T) {
	in := "node.id=1\nlog.retention.ms=abc\n# ok\nnum.partitions=0\n"
	p, err := ParseProperties("conf/server.properties", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	p.Set("log.segment.bytes", "10")
	_, _, err = LoadBroker(p)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		"conf/server.properties:4: num.partitions: Invalid value 0 for configuration num.partitions: Value must be at least 1",
		"conf/server.properties:2: log.retention.ms: Invalid value abc for configuration log.retention.ms: Not a number of type LONG",
		"conf/server.properties (set by flag): log.segment.bytes: Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576",
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	var pe *PropertyError
	if !errors.As(err, &pe) || pe.File != "conf/server.properties" {
		t.Fatalf("error is not a *PropertyError: %v", err)
	}
}

func TestReadPropertiesFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(path, []byte(sampleProperties), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPropertiesFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.File != path || len(p.Entries) != 9 {
		t.Fatalf("read %d entries from %s", len(p.Entries), p.File)
	}
	if _, err := ReadPropertiesFile(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file: no error")
	}
}
