package compattest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Record returns record i of a deterministic data set: key "k-%08d", a value
// of 16 to 271 bytes derived from i (repetitive enough that codecs shrink it),
// and three headers, one of them with an empty value.
func Record(topic string, i int) *kgo.Record {
	return &kgo.Record{
		Topic: topic,
		Key:   []byte(fmt.Sprintf("k-%08d", i)),
		Value: value(i),
		Headers: []kgo.RecordHeader{
			{Key: "seq", Value: []byte(strconv.Itoa(i))},
			{Key: "parity", Value: []byte([]string{"even", "odd"}[i%2])},
			{Key: "empty", Value: []byte{}},
		},
	}
}

func value(i int) []byte {
	n := 16 + i%256
	unit := fmt.Sprintf("v%d.", i)
	return []byte(strings.Repeat(unit, n/len(unit)+1)[:n])
}

// Check returns the index of a fetched record made by Record, or an error
// saying how it differs from what Record produced for that index.
func Check(r *kgo.Record) (int, error) {
	if len(r.Headers) != 3 || r.Headers[0].Key != "seq" {
		return -1, fmt.Errorf("%s/%d@%d: headers %v, want seq, parity, empty", r.Topic, r.Partition, r.Offset, r.Headers)
	}
	i, err := strconv.Atoi(string(r.Headers[0].Value))
	if err != nil {
		return -1, fmt.Errorf("%s/%d@%d: seq header %q: %v", r.Topic, r.Partition, r.Offset, r.Headers[0].Value, err)
	}
	want := Record(r.Topic, i)
	switch {
	case !bytes.Equal(r.Key, want.Key):
		return i, fmt.Errorf("record %d: key %q, want %q", i, r.Key, want.Key)
	case !bytes.Equal(r.Value, want.Value):
		return i, fmt.Errorf("record %d: value %q, want %q", i, r.Value, want.Value)
	}
	for h := range want.Headers {
		if r.Headers[h].Key != want.Headers[h].Key || !bytes.Equal(r.Headers[h].Value, want.Headers[h].Value) {
			return i, fmt.Errorf("record %d: header %d is %s=%q, want %s=%q", i, h,
				r.Headers[h].Key, r.Headers[h].Value, want.Headers[h].Key, want.Headers[h].Value)
		}
	}
	return i, nil
}
