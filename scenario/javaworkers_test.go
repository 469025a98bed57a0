package scenario

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"weir/scenario/spec"
)

func TestJavaSchedule(t *testing.T) {
	cases := []struct {
		s    spec.Schedule
		want string
	}{
		{spec.Schedule{Constant: f64(2048)}, "c:2048"},
		{spec.Schedule{Repeating: true, Segments: []spec.Segment{
			{From: f64(1), To: f64(10000), Duration: spec.Duration(2 * time.Minute)},
			{Rate: f64(0), Duration: spec.Duration(1500 * time.Millisecond)},
		}}, "s:1:1>10000@120000,0@1500"},
	}
	for _, tc := range cases {
		if got := javaSchedule(tc.s); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// The drivers' report lines feed the meter; a line that does not parse
// is an error.
func TestJavaReportLines(t *testing.T) {
	m := newMeter(map[string]int{"t": 3})
	m.setPhase("p")
	w := &javaProducer{spec: spec.Producer{Topic: "t"}, m: m, bytes: map[int32]int64{}}
	if err := w.line("T 1000 70 2 | ack 10 20 30 | lat 5:40 100:20 max=9000 | node 1=100 2=200 -1=5"); err != nil {
		t.Fatal(err)
	}
	if err := w.line("T 2000 75 3 | ack 1 0 0 | lat 5:1 max=6 | node 1=150 2=200"); err != nil {
		t.Fatal(err)
	}
	iv := m.take()
	if got := iv.topics["t"].acked; got[0] != 11 || got[1] != 20 || got[2] != 30 {
		t.Errorf("acked %v", got)
	}
	if iv.sendErrors != 3 || w.sentCount() != 75 || iv.produceLat.Count() != 61 || iv.produceLat.Max() != 9*time.Millisecond {
		t.Errorf("errors %d sent %d latencies %d max %v", iv.sendErrors, w.sentCount(), iv.produceLat.Count(), iv.produceLat.Max())
	}
	if b := w.brokerBytes(); len(b) != 2 || b[1] != 150 || b[2] != 200 {
		t.Errorf("broker bytes %v (negative bootstrap ids dropped)", b)
	}
	c := &javaConsumer{spec: spec.Consumer{Name: "c", Topic: "t"}, m: m}
	if err := c.line("T 1000 | del 5 6 0 | distinct 5 6 0 | lat 64:11 max=70"); err != nil {
		t.Fatal(err)
	}
	// 61 acknowledged, 11 distinct consumed.
	if b := m.backlog(); b != 61-11 {
		t.Errorf("backlog %d, want %d", b, 61-11)
	}
	for _, bad := range []string{"T 1 2", "T 1 2 3 | ack x | lat max=1 | node", "T 1 2 3 | ack 1 | lat 99999:1 max=1 | node", "T 1 2 3 | ack 1 | lat 1:1 | node 1=x"} {
		if err := w.line(bad); err == nil {
			t.Errorf("producer line %q accepted", bad)
		}
	}
	if err := c.line("T 1 | del 1 | lat 1:1 max=1"); err == nil {
		t.Error("a consumer line without distinct accepted")
	}
}

// The Java drivers bucket latencies exactly as histogram.go does, so the
// counts they report merge without error. Needs Java and Maven (the
// compat suite's); scripts/test sets WEIR_REQUIRE_JAVA.
func TestJavaBucketsMatchGo(t *testing.T) {
	if _, err := exec.LookPath("mvn"); err != nil {
		if os.Getenv("WEIR_REQUIRE_JAVA") == "1" {
			t.Fatal("mvn not found and WEIR_REQUIRE_JAVA is set")
		}
		t.Skip("needs Java and Maven")
	}
	dir, err := findJavaDir("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cp, err := buildJavaVersion(ctx, dir, "4.3.0")
	if err != nil {
		t.Fatal(err)
	}
	values := []int64{0, 1, 63, 64, 65, 100, 127, 128, 1000, 4095, 4096, 123456, 1 << 30, 1 << 40, 1 << 62}
	args := []string{"-cp", cp, "weir.scenario.Driver", "buckets"}
	for _, v := range values {
		args = append(args, strconv.FormatInt(v, 10))
	}
	out, err := exec.CommandContext(ctx, "java", args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(out))
	if len(got) != len(values) {
		t.Fatalf("java printed %q", out)
	}
	for i, v := range values {
		if want := strconv.Itoa(bucketOf(v)); got[i] != want {
			t.Errorf("%d µs: java bucket %s, go %s", v, got[i], want)
		}
	}
}
