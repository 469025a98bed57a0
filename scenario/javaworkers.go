package scenario

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"weir/scenario/spec"
)

// jvm is one Java driver process (scenario/java: ScenarioProducer or
// ScenarioConsumer): control lines in on stdin, report lines out on
// stdout (Driver.java documents both).
type jvm struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *tailBuffer
	mu     sync.Mutex // guards writes to stdin and sent
	last   map[string]string
	exited chan struct{}
	err    error       // the process's exit, after exited is closed
	quits  atomic.Bool // quit was called: an exit is expected
}

// died reports a driver that exited without being asked to.
func (j *jvm) died() error {
	select {
	case <-j.exited:
		if j.quits.Load() {
			return nil
		}
		return fmt.Errorf("java driver %s exited: %v\n%s", j.name, j.err, tail(j.stderr.Bytes(), 2000))
	default:
		return nil
	}
}

// startJVM starts class with args on classpath. The process gets SIGTERM
// when ctx ends and SIGKILL 10 s later.
func startJVM(ctx context.Context, name, classpath, class string, args []string) (*jvm, error) {
	full := append([]string{"-Xmx768m", "-XX:+UseSerialGC", "-cp", classpath,
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", class}, args...)
	cmd := exec.CommandContext(ctx, "java", full...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	j := &jvm{name: name, cmd: cmd, stderr: &tailBuffer{max: 16 << 10}, last: map[string]string{}, exited: make(chan struct{})}
	cmd.Stderr = j.stderr
	var err error
	if j.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if j.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("scenario: starting java for %s: %w", name, err)
	}
	return j, nil
}

// steer passes the switches to the driver every 10 ms (apply sends what
// changed) until ctx ends, the driver exits or the run quits.
func (j *jvm) steer(ctx context.Context, sw *switches, apply func()) {
	tk := time.NewTicker(10 * time.Millisecond)
	defer tk.Stop()
	for !sw.quit.Load() {
		apply()
		select {
		case <-ctx.Done():
			return
		case <-j.exited:
			return
		case <-tk.C:
		}
	}
}

func onOff(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// set sends "cmd arg" unless that was the last value sent for cmd.
func (j *jvm) set(cmd, arg string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.last[cmd] == arg {
		return
	}
	j.last[cmd] = arg
	fmt.Fprintf(j.stdin, "%s %s\n", cmd, arg)
}

// quit asks the driver to stop, waits for it to exit (bounded by ctx,
// then SIGKILL) and returns its exit error with the end of its log.
func (j *jvm) quit(ctx context.Context) error {
	j.quits.Store(true)
	j.mu.Lock()
	fmt.Fprintln(j.stdin, "QUIT")
	j.stdin.Close()
	j.mu.Unlock()
	select {
	case <-j.exited:
	case <-ctx.Done():
		j.cmd.Process.Kill()
		<-j.exited
	}
	if j.err != nil {
		return fmt.Errorf("java driver %s: %w\n%s", j.name, j.err, tail(j.stderr.Bytes(), 2000))
	}
	return nil
}

// read hands each stdout line to line until the driver closes stdout,
// then reaps the process. A line that does not parse stops the driver.
func (j *jvm) read(line func(string) error) {
	defer close(j.exited)
	sc := bufio.NewScanner(j.stdout)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var perr error
	for sc.Scan() {
		if perr == nil {
			if perr = line(sc.Text()); perr != nil {
				j.cmd.Process.Kill()
			}
		}
	}
	io.Copy(io.Discard, j.stdout)
	j.err = errors.Join(perr, j.cmd.Wait())
}

// javaSchedule encodes a schedule for ScenarioProducer --schedule.
func javaSchedule(s spec.Schedule) string {
	if s.Constant != nil {
		return "c:" + strconv.FormatFloat(*s.Constant, 'g', -1, 64)
	}
	var segs []string
	for _, sg := range s.Segments {
		ms := strconv.FormatInt(sg.Duration.D().Milliseconds(), 10)
		if sg.Rate != nil {
			segs = append(segs, strconv.FormatFloat(*sg.Rate, 'g', -1, 64)+"@"+ms)
		} else {
			segs = append(segs, strconv.FormatFloat(*sg.From, 'g', -1, 64)+">"+strconv.FormatFloat(*sg.To, 'g', -1, 64)+"@"+ms)
		}
	}
	rep := "0"
	if s.Repeating {
		rep = "1"
	}
	return "s:" + rep + ":" + strings.Join(segs, ",")
}

func configArgs(kv map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		out = append(out, "--config", k+"="+kv[k])
	}
	return out
}

// javaProducer runs a producer entry's instances in one JVM.
type javaProducer struct {
	spec     spec.Producer
	fraction float64 // of all producer instances: its share of budgets and explore rates
	m        *meter
	sw       *switches
	j        *jvm
	sent     atomic.Int64
	claimed  atomic.Int64 // budget claimed this round
	atClaim  atomic.Int64 // sent when it was claimed
	finished atomic.Bool  // the driver reported DONE
	errs     int64        // failed sends reported so far (read by line only)
	bmu      sync.Mutex
	bytes    map[int32]int64
}

func newJavaProducer(ctx context.Context, ps spec.Producer, partitions int, fraction float64, bootstrap, classpath string, sample time.Duration, m *meter, sw *switches) (*javaProducer, error) {
	d := ps.Distributor
	args := []string{"--bootstrap", bootstrap, "--topic", ps.Topic, "--partitions", strconv.Itoa(partitions),
		"--record-size", strconv.Itoa(ps.RecordSize), "--count", strconv.Itoa(ps.Count),
		"--records", strconv.FormatInt(ps.Records, 10), "--schedule", javaSchedule(ps.Rate),
		"--distributor", fmt.Sprintf("%s:%g:%d:%d", d.Type, d.Alpha, d.Keys, d.Seed),
		"--report-ms", strconv.FormatInt(sample.Milliseconds(), 10)}
	args = append(args, configArgs(ps.Configs)...)
	j, err := startJVM(ctx, "producer "+ps.Name, classpath, "weir.scenario.ScenarioProducer", args)
	if err != nil {
		return nil, err
	}
	w := &javaProducer{spec: ps, fraction: fraction, m: m, sw: sw, j: j, bytes: map[int32]int64{}}
	go j.read(w.line)
	return w, nil
}

// line applies one report line of ScenarioProducer.
func (w *javaProducer) line(s string) error {
	if s == "DONE" {
		w.finished.Store(true)
		return nil
	}
	parts := strings.Split(s, "|")
	if len(parts) != 4 {
		return fmt.Errorf("scenario: producer driver line %q", s)
	}
	head := strings.Fields(parts[0])
	if len(head) != 4 || head[0] != "T" {
		return fmt.Errorf("scenario: producer driver line %q", s)
	}
	sent, err1 := strconv.ParseInt(head[2], 10, 64)
	errs, err2 := strconv.ParseInt(head[3], 10, 64)
	acks, err3 := ints(strings.Fields(parts[1]), "ack")
	lat, err4 := parseHistogram(strings.Fields(parts[2]), "lat")
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return fmt.Errorf("scenario: producer driver line %q: %w", s, err)
	}
	nodes := map[int32]int64{}
	for _, f := range strings.Fields(parts[3])[1:] {
		k, v, ok := strings.Cut(f, "=")
		id, e1 := strconv.ParseInt(k, 10, 32)
		b, e2 := strconv.ParseInt(v, 10, 64)
		if !ok || e1 != nil || e2 != nil {
			return fmt.Errorf("scenario: producer driver node %q", f)
		}
		if id >= 0 { // bootstrap connections count as negative ids
			nodes[int32(id)] = b
		}
	}
	w.m.ackedBatch(w.spec.Topic, acks, lat, errs-w.errs)
	w.errs = errs
	w.sent.Store(sent)
	w.bmu.Lock()
	w.bytes = nodes
	w.bmu.Unlock()
	return nil
}

func (w *javaProducer) run(ctx context.Context) {
	round := int64(0)
	w.j.steer(ctx, w.sw, func() {
		if r := w.sw.budgetRound.Load(); r != round {
			round = r
			share := int64(math.Round(float64(w.sw.budgetTotal.Load()) * w.fraction))
			got := w.sw.claim(share)
			w.atClaim.Store(w.sent.Load())
			w.claimed.Store(max(got, 0))
			w.j.set("BUDGET", strconv.FormatInt(got, 10))
		} else if w.sw.budget.Load() < 0 {
			w.claimed.Store(0)
			w.j.set("BUDGET", "-1")
		}
		w.j.set("RATE", strconv.FormatFloat(loadRate(&w.sw.rate)*w.fraction, 'f', 3, 64))
		w.j.set("ON", onOff(w.sw.produce.Load() && !w.sw.quit.Load()))
	})
}

func (w *javaProducer) close(ctx context.Context) error { return w.j.quit(ctx) }
func (w *javaProducer) failed() error                   { return w.j.died() }
func (w *javaProducer) sentCount() int64                { return w.sent.Load() }

func (w *javaProducer) done() bool {
	return w.finished.Load() || (w.spec.Records > 0 && w.sent.Load() >= w.spec.Records*int64(w.spec.Count))
}

func (w *javaProducer) owed() int64 {
	return max(w.claimed.Load()-(w.sent.Load()-w.atClaim.Load()), 0)
}

func (w *javaProducer) brokerBytes() map[int32]int64 {
	w.bmu.Lock()
	defer w.bmu.Unlock()
	return maps.Clone(w.bytes)
}

// javaConsumer runs a consumer entry's members in one JVM.
type javaConsumer struct {
	spec spec.Consumer
	m    *meter
	sw   *switches
	j    *jvm
}

func newJavaConsumer(ctx context.Context, cs spec.Consumer, partitions int, bootstrap, classpath string, sample time.Duration, m *meter, sw *switches) (*javaConsumer, error) {
	args := []string{"--type", cs.Type, "--bootstrap", bootstrap, "--topic", cs.Topic, "--group", cs.Group,
		"--partitions", strconv.Itoa(partitions), "--count", strconv.Itoa(cs.Count),
		"--processing", fmt.Sprintf("%g:%g:%d", cs.Processing.MinMs, cs.Processing.MaxMs, cs.Processing.Parallelism),
		"--report-ms", strconv.FormatInt(sample.Milliseconds(), 10)}
	if cs.Type == spec.ConsumerShare {
		args = append(args, "--mode", cs.AcquireMode)
	}
	args = append(args, configArgs(cs.Configs)...)
	j, err := startJVM(ctx, "consumer "+cs.Name, classpath, "weir.scenario.ScenarioConsumer", args)
	if err != nil {
		return nil, err
	}
	w := &javaConsumer{spec: cs, m: m, sw: sw, j: j}
	go j.read(w.line)
	return w, nil
}

// line applies one report line of ScenarioConsumer.
func (w *javaConsumer) line(s string) error {
	if s == "DONE" {
		return nil
	}
	parts := strings.Split(s, "|")
	if len(parts) != 4 || !strings.HasPrefix(parts[0], "T ") {
		return fmt.Errorf("scenario: consumer driver line %q", s)
	}
	del, err1 := ints(strings.Fields(parts[1]), "del")
	distinct, err2 := ints(strings.Fields(parts[2]), "distinct")
	lat, err3 := parseHistogram(strings.Fields(parts[3]), "lat")
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("scenario: consumer driver line %q: %w", s, err)
	}
	w.m.consumedBatch(w.spec.Topic, w.spec.Name, del, distinct, lat)
	return nil
}

func (w *javaConsumer) run(ctx context.Context) {
	w.j.steer(ctx, w.sw, func() {
		w.j.set("ON", onOff(w.sw.consume.Load() && !w.sw.quit.Load()))
		w.j.set("NOPROC", onOff(w.sw.noProcessing.Load()))
	})
}

func (w *javaConsumer) close(ctx context.Context) error { return w.j.quit(ctx) }
func (w *javaConsumer) failed() error                   { return w.j.died() }

// ints parses "name n n n ...".
func ints(f []string, name string) ([]int64, error) {
	if len(f) == 0 || f[0] != name {
		return nil, fmt.Errorf("want %s", name)
	}
	out := make([]int64, len(f)-1)
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// parseHistogram parses "name b:c b:c ... max=us" (Driver.Histogram).
func parseHistogram(f []string, name string) (*Histogram, error) {
	if len(f) == 0 || f[0] != name {
		return nil, fmt.Errorf("want %s", name)
	}
	var h Histogram
	var maxUs int64
	if last := f[len(f)-1]; strings.HasPrefix(last, "max=") {
		v, err := strconv.ParseInt(strings.TrimPrefix(last, "max="), 10, 64)
		if err != nil {
			return nil, err
		}
		maxUs, f = v, f[:len(f)-1]
	}
	for _, s := range f[1:] {
		bs, cs, ok := strings.Cut(s, ":")
		b, e1 := strconv.Atoi(bs)
		c, e2 := strconv.ParseInt(cs, 10, 64)
		if !ok || e1 != nil || e2 != nil || b < 0 || b >= histBuckets || c < 0 {
			return nil, fmt.Errorf("bucket %q", s)
		}
		h.addBucket(b, c, time.Duration(maxUs)*time.Microsecond)
	}
	return &h, nil
}
