package scenario

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The Java driver is the Maven project in scenario/java: one
// KafkaShareConsumer from kafka-clients 4.3.0 that prints "S elapsed_ms
// cumulative" once a second and "DONE elapsed_ms consumed distinct
// duplicates first_ms last_ms" at the end (ShareDrain.java documents the protocol).
const javaMain = "weir.scenario.ShareDrain"

// javaGrace bounds the JVM's start and close on top of the drain timeout.
const javaGrace = time.Minute

// findJavaDir returns the Java driver's project directory: dir if given,
// else scenario/java found by walking up from the working directory or
// from the executable's directory.
func findJavaDir(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, d := range starts {
		for {
			cand := filepath.Join(d, "scenario", "java")
			if _, err := os.Stat(filepath.Join(cand, "pom.xml")); err == nil {
				return cand, nil
			}
			parent := filepath.Dir(d)
			if parent == d {
				break
			}
			d = parent
		}
	}
	return "", errors.New("scenario: cannot find scenario/java/pom.xml above the working directory; pass --java-dir")
}

// buildJava builds the drivers against kafka-clients 4.3.0 (the share
// consumer's version); see buildJavaVersion.
func buildJava(ctx context.Context, javaDir string) (string, error) {
	return buildJavaVersion(ctx, javaDir, "4.3.0")
}

// buildJavaVersion compiles the drivers against kafka-clients version and
// copies its dependencies into <repo>/.cache/scenario-java/<version>,
// unless the classes there are newer than every source. Maven runs
// offline first (the compat suite fills ~/.m2 with kafka-clients 4.3.0),
// online if that fails (another version is fetched from Maven Central
// once). Against 3.x the share classes are left out (no.share). It
// returns the classpath.
func buildJavaVersion(ctx context.Context, javaDir, version string) (string, error) {
	buildDir, err := filepath.Abs(filepath.Join(javaDir, "..", "..", ".cache", "scenario-java", version))
	if err != nil {
		return "", err
	}
	classpath := filepath.Join(buildDir, "classes") + string(os.PathListSeparator) + filepath.Join(buildDir, "lib", "*")
	stamp := filepath.Join(buildDir, "classes", "weir", "scenario", "Driver.class")
	sources, _ := filepath.Glob(filepath.Join(javaDir, "src", "main", "java", "weir", "scenario", "*.java"))
	if newer(stamp, append(sources, filepath.Join(javaDir, "pom.xml"))...) {
		return classpath, nil
	}
	args := []string{"-B", "-q", "-f", filepath.Join(javaDir, "pom.xml"),
		"-Dkafka.version=" + version, "-Dscenario.build.dir=" + buildDir,
		"compile", "dependency:copy-dependencies", "-DincludeScope=runtime",
		"-DoutputDirectory=" + filepath.Join(buildDir, "lib")}
	if strings.HasPrefix(version, "3.") || strings.HasPrefix(version, "2.") {
		args = append(args, "-Dno.share=true")
	}
	var lastOut []byte
	for _, offline := range []bool{true, false} {
		a := args
		if offline {
			a = append([]string{"-o"}, args...)
		}
		out, err := exec.CommandContext(ctx, "mvn", a...).CombinedOutput()
		if err == nil {
			return classpath, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		lastOut = out
	}
	return "", fmt.Errorf("scenario: building the Java drivers against kafka-clients %s (mvn in %s) failed:\n%s", version, javaDir, tail(lastOut, 4000))
}

// newer reports whether target exists and is newer than every source.
func newer(target string, sources ...string) bool {
	ti, err := os.Stat(target)
	if err != nil {
		return false
	}
	for _, s := range sources {
		si, err := os.Stat(s)
		if err != nil || si.ModTime().After(ti.ModTime()) {
			return false
		}
	}
	return true
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// drainJava runs the Java driver as a subprocess and turns its progress
// lines into a Series. The JVM gets SIGTERM when ctx ends and SIGKILL if it
// has not exited 10 s later; it is never left running.
func drainJava(ctx context.Context, spec drainSpec) (drainOutcome, error) {
	cfg := spec.cfg
	dir, err := findJavaDir(cfg.JavaDir)
	if err != nil {
		return drainOutcome{}, err
	}
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	cp, err := buildJava(bctx, dir)
	cancel()
	if err != nil {
		return drainOutcome{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout+javaGrace)
	defer cancel()
	cmd := exec.CommandContext(pctx, "java", "-Xmx1g", "-cp", cp,
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		javaMain,
		"--bootstrap", cfg.Bootstrap,
		"--topic", cfg.Topic,
		"--group", cfg.Group,
		"--mode", cfg.AcquireMode,
		"--max-poll-records", strconv.Itoa(cfg.MaxPollRecords),
		"--fetch-max-wait-ms", strconv.FormatInt(cfg.FetchMaxWait.Milliseconds(), 10),
		"--expect", strconv.FormatInt(spec.expect, 10),
		"--timeout-ms", strconv.FormatInt(cfg.Timeout.Milliseconds(), 10),
		"--report-ms", strconv.FormatInt(cfg.SampleInterval.Milliseconds(), 10),
	)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	stderr := &tailBuffer{max: 16 << 10}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return drainOutcome{}, err
	}
	if err := cmd.Start(); err != nil {
		return drainOutcome{}, fmt.Errorf("scenario: starting java: %w", err)
	}
	o, perr := readJavaProgress(stdout)
	if perr != nil {
		cancel()                    // a driver we cannot follow is stopped,
		io.Copy(io.Discard, stdout) // and never left blocked on a full pipe
	}
	werr := cmd.Wait()
	var exit *exec.ExitError
	switch {
	case perr != nil:
		return o, errors.Join(perr, werr)
	case werr == nil:
		return o, nil
	case errors.As(werr, &exit) && exit.ExitCode() == 3:
		// The drain timeout: Run reports what was drained. The JVM's log
		// (Kafka's client warns at WARN level) usually says why.
		if logs := bytes.TrimSpace(stderr.Bytes()); len(logs) > 0 {
			return o, fmt.Errorf("scenario: the java driver reached its timeout; the end of its log:\n%s", tail(logs, 3000))
		}
		return o, nil
	default:
		return o, fmt.Errorf("scenario: java driver: %w\n%s", werr, stderr.Bytes())
	}
}

// readJavaProgress parses the driver's stdout until it closes.
func readJavaProgress(r io.Reader) (drainOutcome, error) {
	var o drainOutcome
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		nums := make([]int64, len(f)-1)
		for i, s := range f[1:] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return o, fmt.Errorf("scenario: java driver line %q: %w", sc.Text(), err)
			}
			nums[i] = n
		}
		switch {
		case f[0] == "S" && len(nums) == 2:
			at := time.Duration(nums[0]) * time.Millisecond
			if n := len(o.series.Samples); n > 0 && at <= o.series.Samples[n-1].At {
				continue
			}
			if err := o.series.Observe(at, nums[1]); err != nil {
				return o, err
			}
			o.consumed = nums[1]
		case f[0] == "DONE" && len(nums) == 6:
			at := time.Duration(nums[0]) * time.Millisecond
			if n := len(o.series.Samples); n == 0 || at > o.series.Samples[n-1].At {
				if err := o.series.Observe(at, nums[1]); err != nil {
					return o, err
				}
			}
			o.consumed, o.distinct, o.duplicates = nums[1], nums[2], nums[3]
			if nums[4] >= 0 {
				o.first, o.last = time.Duration(nums[4])*time.Millisecond, time.Duration(nums[5])*time.Millisecond
			}
		default:
			return o, fmt.Errorf("scenario: unexpected java driver line %q", sc.Text())
		}
	}
	return o, sc.Err()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.buf.Bytes())
}
