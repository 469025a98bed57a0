package client

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The integration tests run against one broker per test binary: a `weir
// serve` process built from this checkout, or, when WEIR_TEST_BOOTSTRAP is
// set, the broker at that address (for example Apache Kafka started with
// scripts/apache-kafka; see doc.go).

var (
	brokerOnce sync.Once
	brokerAddr string
	brokerErr  error
	brokerStop func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	if brokerStop != nil {
		brokerStop()
	}
	os.Exit(code)
}

func getenvBootstrap() string { return os.Getenv("WEIR_TEST_BOOTSTRAP") }

var listenLine = regexp.MustCompile(`weir listening on (127\.0\.0\.1:\d+)`)

// bootstrap returns the address of the shared test broker, starting it on
// first use.
func bootstrap(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs a broker process")
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("test broker: %v", r)
		}
	}()
	return BrokerForExample()
}

// weirBinary builds cmd/weir once per test binary.
var (
	weirBuildOnce sync.Once
	weirBin       string
	weirBuildErr  error
	weirBuildDir  string
)

func buildWeir() (string, error) {
	weirBuildOnce.Do(func() {
		weirBuildDir, weirBuildErr = os.MkdirTemp("", "weir-client-bin-")
		if weirBuildErr != nil {
			return
		}
		weirBin = filepath.Join(weirBuildDir, "weir")
		build := exec.Command("go", "build", "-o", weirBin, "./cmd/weir")
		build.Dir = ".."
		if out, err := build.CombinedOutput(); err != nil {
			weirBuildErr = fmt.Errorf("go build ./cmd/weir: %v\n%s", err, out)
		}
	})
	return weirBin, weirBuildErr
}

// weirProc is one `weir serve` process.
type weirProc struct {
	cmd  *exec.Cmd
	addr string
}

// runWeir starts `weir serve` on listen (port 0 picks one) with dataDir and
// waits for its listening line.
func runWeir(listen, dataDir string) (*weirProc, error) {
	bin, err := buildWeir()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--listen", listen, "--data-dir", dataDir, "--log-level", "warn")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case addr := <-found:
		return &weirProc{cmd: cmd, addr: addr}, nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("weir serve printed no listening line in 30s; stderr:\n%s", stderr.String())
	}
}

// kill stops the process with SIGKILL and waits for it.
func (w *weirProc) kill() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}

// startWeir runs the shared test broker with a temporary data directory,
// returning its address and a stop function.
func startWeir() (string, func(), error) {
	dir, err := os.MkdirTemp("", "weir-client-test-")
	if err != nil {
		return "", nil, err
	}
	w, err := runWeir("127.0.0.1:0", filepath.Join(dir, "data"))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return w.addr, func() {
		w.kill()
		os.RemoveAll(dir)
		if weirBuildDir != "" {
			os.RemoveAll(weirBuildDir)
		}
	}, nil
}

// eventually polls fn every 20 ms until it returns nil or timeout passes.
func eventually(t testing.TB, timeout time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met after %v: %v", timeout, err)
		}
		<-tick.C
	}
}

// testCtx is a context bounded for one integration test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// uniqueTopic names a topic no other test run used.
func uniqueTopic(t testing.TB) string {
	return fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano()%1_000_000_000)
}
