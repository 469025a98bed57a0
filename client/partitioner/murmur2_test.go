package partitioner

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestMurmur2JavaVectors compares the keyed path with output of the Java
// client itself (testdata/javavectors/gen.sh, kafka-clients 4.3.0).
func TestMurmur2JavaVectors(t *testing.T) {
	f, err := os.Open("testdata/murmur2_java.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var counts []int32
	keys := 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.HasPrefix(text, "#") || text == "" {
			continue
		}
		cols := strings.Split(text, "\t")
		if counts == nil { // header: key_hex murmur2 n=1 n=2 ...
			for _, c := range cols[2:] {
				n, err := strconv.ParseInt(strings.TrimPrefix(c, "n="), 10, 32)
				if err != nil {
					t.Fatalf("line %d: bad header %q", line, c)
				}
				counts = append(counts, int32(n))
			}
			continue
		}
		if len(cols) != 2+len(counts) {
			t.Fatalf("line %d: %d columns, want %d", line, len(cols), 2+len(counts))
		}
		key, err := hex.DecodeString(cols[0])
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		want, err := strconv.ParseInt(cols[1], 10, 32)
		if err != nil {
			t.Fatalf("line %d: %v", line, err)
		}
		if got := int32(Murmur2(key)); got != int32(want) {
			t.Errorf("line %d: murmur2(%x) = %d, Java %d", line, key, got, want)
		}
		for i, n := range counts {
			want, err := strconv.ParseInt(cols[2+i], 10, 32)
			if err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
			if got := PartitionForKey(key, n); got != int32(want) {
				t.Errorf("line %d: partition(%x, %d) = %d, Java %d", line, key, n, got, want)
			}
		}
		keys++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if keys < 300 {
		t.Fatalf("only %d keys in the vector file; regenerate it", keys)
	}
}

func TestToPositive(t *testing.T) {
	for _, tc := range []struct {
		in   uint32
		want int32
	}{
		{0, 0},
		{1, 1},
		{0x7fffffff, 0x7fffffff},
		{0x80000000, 0},          // MinInt32: abs() would overflow, the mask gives 0
		{0xffffffff, 0x7fffffff}, // -1
		{0xfffffffe, 0x7ffffffe}, // -2, not 2
	} {
		if got := ToPositive(tc.in); got != tc.want {
			t.Errorf("ToPositive(%#x) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzPartitionForKey checks that any key maps into range and that the
// mapping is the masked hash, for any partition count.
func FuzzPartitionForKey(f *testing.F) {
	f.Add([]byte(""), int32(1))
	f.Add([]byte("a"), int32(3))
	f.Add([]byte{0xff, 0x80, 0x7f}, int32(7))
	f.Add([]byte("key-17"), int32(1000))
	f.Fuzz(func(t *testing.T, key []byte, n int32) {
		if n <= 0 {
			return
		}
		p := PartitionForKey(key, n)
		if p < 0 || p >= n {
			t.Fatalf("partition %d out of [0,%d)", p, n)
		}
		if h := Murmur2(key); p != int32(h&0x7fffffff)%n {
			t.Fatalf("partition %d is not masked hash %#x mod %d", p, h, n)
		}
	})
}
