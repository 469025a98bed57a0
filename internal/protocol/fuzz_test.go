package protocol

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzCheck: Check never panics, whatever the key, version and bytes, and
// a body it accepts is one kmsg decodes quickly and without error: the
// schema walks what kmsg reads, so kmsg never meets a length Check did not
// bound.
func FuzzCheck(f *testing.F) {
	for i, b := range kmsgBodies() {
		if b.key == 0 || b.key == 1 || b.key == 3 || b.key == 18 || i%5 == 0 {
			f.Add(uint8(b.key), uint8(b.version), b.b)
		}
	}
	f.Fuzz(func(t *testing.T, key, version uint8, body []byte) {
		k := int16(key) % int16(len(requests))
		v := int16(version)
		if m := requests[k]; m.max >= 0 {
			v %= m.max + 1
		}
		if err := Check(k, v, body); err != nil {
			return
		}
		req := kmsg.RequestForKey(k)
		req.SetVersion(v)
		start := time.Now()
		err := req.ReadFrom(body)
		if took := time.Since(start); took > time.Second {
			t.Fatalf("kmsg took %v on an accepted %d-byte body", took, len(body))
		}
		if err != nil {
			t.Fatalf("kmsg refuses an accepted body: %v", err)
		}
	})
}
