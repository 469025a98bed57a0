package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"weir/internal/testport"
)

var weirBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "weir-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	weirBin = filepath.Join(dir, "weir")
	build := exec.Command("go", "build", "-o", weirBin, "weir/cmd/weir")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building weir:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is one running weir serve process.
type proc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

// freePort returns a loopback port free right now, to reuse across
// restarts so clients keep their bootstrap address.
func freePort(t *testing.T) string {
	t.Helper()
	return testport.Addr(t)
}

// startWeir runs weir serve on addr with data in dir (and any further
// flags) and waits for its "listening" line.
func startWeir(t *testing.T, dir, addr string, flags ...string) *proc {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := tryStart(dir, addr, flags)
		if err == nil {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("weir did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // the port may linger briefly after a kill
	}
}

func tryStart(dir, addr string, flags []string) (*proc, error) {
	cmd := exec.Command(weirBin, append([]string{"serve", "--data-dir", dir, "--listen", addr, "--log-level", "warn"}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, addr: addr, done: make(chan struct{})}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	go func() { cmd.Wait(); close(p.done) }()
	select {
	case line := <-lines:
		if !strings.HasPrefix(line, "weir listening on "+addr) {
			p.kill()
			return nil, fmt.Errorf("unexpected first line %q", line)
		}
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("exited: %s", stderr.String())
	case <-time.After(15 * time.Second):
		p.kill()
		return nil, fmt.Errorf("no listening line in 15s")
	}
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks for a clean shutdown and waits for it.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.kill()
		t.Fatal("weir did not stop within 20s of SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("weir exited with %d after SIGTERM", code)
	}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
