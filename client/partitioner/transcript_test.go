package partitioner

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// scriptedRand hands out queued values and notes any draw beyond them.
type scriptedRand struct {
	vals  []uint32
	extra int
}

func (s *scriptedRand) next() uint32 {
	if len(s.vals) == 0 {
		s.extra++
		return 0
	}
	v := s.vals[0]
	s.vals = s.vals[1:]
	return v
}

// TestBuiltInJavaTranscript replays testdata/builtin_java.txt, recorded from
// the Java client's BuiltInPartitioner (gen.sh): every step must consume the
// same random values and land on the same partition, and load stats must
// produce the same table size.
func TestBuiltInJavaTranscript(t *testing.T) {
	f, err := os.Open("testdata/builtin_java.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	var (
		u     *UniformSticky
		top   *Topic
		rnd   = &scriptedRand{}
		batch int64
		steps int
		where string
	)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: "+format, append([]any{where}, args...)...)
	}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		where = "line " + strconv.Itoa(line) + " (" + text + ")"
		op, result, _ := strings.Cut(text, " -> ")
		fields := strings.Fields(op)
		args := map[string]string{}
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if ok {
				args[k] = v
			}
		}
		if fields[0] == "scenario" {
			n := atoi(t, args["partitions"])
			batch = int64(atoi(t, args["batch"]))
			var ll []int32
			if s := args["leaderless"]; s != "-" {
				ll = int32s(t, s)
			}
			top = NewTopic("t", leaders(n, ll...))
			u = NewUniformSticky(Config{BatchSize: int(batch), Adaptive: true}, rnd.next)
			continue
		}
		if r := args["r"]; r != "" && r != "-" {
			for _, v := range strings.Split(r, ",") {
				x, err := strconv.ParseUint(v, 10, 32)
				if err != nil {
					fail("%v", err)
				}
				rnd.vals = append(rnd.vals, uint32(x))
			}
		}
		switch fields[0] {
		case "stats":
			if args["q"] == "nil" {
				u.stats.Store(nil)
			} else {
				q := int32s(t, args["q"])
				q64 := make([]int64, len(q))
				for i, v := range q {
					q64[i] = int64(v)
				}
				u.stats.Store(buildLoadStats(q64, int32s(t, args["ids"]), atoi(t, args["len"]), len(q), WeightBatches, batch))
			}
			got := "none"
			if s := u.stats.Load(); s != nil {
				got = strconv.FormatInt(s.cft[len(s.cft)-1], 10)
			}
			if got != result {
				fail("table end %s, Java %s", got, result)
			}
		case "peek":
			if got := u.Peek(top).Partition(); strconv.Itoa(int(got)) != result {
				fail("partition %d, Java %s", got, result)
			}
		case "update":
			s := u.Peek(top)
			u.Update(s, atoi(t, args["bytes"]), args["switch"] == "true", top)
			if got := u.Peek(top).Partition(); strconv.Itoa(int(got)) != result {
				fail("partition %d, Java %s", got, result)
			}
		default:
			fail("unknown step")
		}
		if len(rnd.vals) != 0 || rnd.extra != 0 {
			fail("random draws differ from Java: %d unused, %d extra", len(rnd.vals), rnd.extra)
		}
		steps++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if steps < 500 {
		t.Fatalf("only %d steps replayed; regenerate the transcript", steps)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("bad number %q", s)
	}
	return n
}

func int32s(t *testing.T, s string) []int32 {
	t.Helper()
	if s == "-" {
		return nil
	}
	var out []int32
	for _, v := range strings.Split(s, ",") {
		out = append(out, int32(atoi(t, v)))
	}
	return out
}
