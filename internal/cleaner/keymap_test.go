package cleaner

import (
	"fmt"
	"testing"
)

func TestKeyMapPutGetAndGrowth(t *testing.T) {
	m := newKeyMap(1<<20, 0.9) // 65536 slots at most
	m.reset(1000)
	if m.capacity() != 58982 || len(m.slots) != minMapSlots {
		t.Fatalf("capacity %d, starting slots %d", m.capacity(), len(m.slots))
	}
	n := 50000
	for i := range n {
		if !m.put([]byte(fmt.Sprint("key-", i)), 1000+int64(i)) {
			t.Fatalf("put %d refused below capacity", i)
		}
	}
	// Later records of a key replace earlier ones without a new entry.
	for i := 0; i < n; i += 7 {
		if !m.put([]byte(fmt.Sprint("key-", i)), 1000+int64(n+i)) {
			t.Fatalf("update %d refused", i)
		}
	}
	if m.used != n || len(m.slots) != 65536 {
		t.Fatalf("used %d slots %d", m.used, len(m.slots))
	}
	for i := range n {
		want := 1000 + int64(i)
		if i%7 == 0 {
			want = 1000 + int64(n+i)
		}
		if got := m.get([]byte(fmt.Sprint("key-", i))); got != want {
			t.Fatalf("get key-%d = %d, want %d", i, got, want)
		}
	}
	if got := m.get([]byte("absent")); got != -1 {
		t.Fatalf("absent key maps to %d", got)
	}
	// Full: a new key is refused, an existing one still updates.
	for i := n; m.used < m.capacity(); i++ {
		m.put([]byte(fmt.Sprint("more-", i)), 2000000)
	}
	if m.put([]byte("one too many"), 2000001) {
		t.Fatal("put past capacity accepted")
	}
	if !m.put([]byte("key-1"), 2000002) || m.get([]byte("key-1")) != 2000002 {
		t.Fatal("update of a mapped key refused when full")
	}
	// Offsets outside the round's span are refused.
	if m.put([]byte("key-2"), 999) || m.put([]byte("key-2"), 1000+maxDeltaSpan) {
		t.Fatal("offset outside [base, base+2^32-1) accepted")
	}
	m.reset(5)
	if m.get([]byte("key-3")) != -1 || m.used != 0 || len(m.slots) != minMapSlots {
		t.Fatal("reset kept entries")
	}
}

func TestKeyMapTinyBudget(t *testing.T) {
	m := newKeyMap(64, 0.9) // 4 slots: room for 3 keys
	m.reset(0)
	for i := range 3 {
		if !m.put([]byte{byte(i)}, int64(i)) {
			t.Fatalf("put %d refused", i)
		}
	}
	if m.put([]byte{9}, 9) {
		t.Fatal("a fourth key fit in 64 bytes")
	}
}

func BenchmarkKeyMapPut(b *testing.B) {
	m := newKeyMap(128<<20, 0.9)
	keys := make([][]byte, 1<<20)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key-%08d", i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%len(keys) == 0 {
			m.reset(0)
		}
		m.put(keys[i%len(keys)], int64(i%len(keys)))
	}
}
