package localcluster

import (
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStatAlive(t *testing.T) {
	tests := []struct {
		name string
		stat string
		err  error
		proc bool
		want bool
	}{
		{"running", "5533 (weir) S 1 5533 5533 0", nil, true, true},
		{"zombie", "5533 (weir) Z 1 5533 5533 0", nil, true, false},
		{"parenthesis in the name", "5533 (we) R) R 1 5533", nil, true, true},
		{"zombie with a parenthesis in the name", "5533 (we) R) Z 1 5533", nil, true, false},
		{"reaped after kill(0) found it", "", fs.ErrNotExist, true, false},
		{"reaped, wrapped error", "", &fs.PathError{Op: "open", Path: "/proc/5533/stat", Err: fs.ErrNotExist}, true, false},
		{"no /proc at all", "", fs.ErrNotExist, false, true},
		{"stat unreadable", "", fs.ErrPermission, true, true},
		{"stat cut short", "5533 (weir)", nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statAlive([]byte(tt.stat), tt.err, tt.proc); got != tt.want {
				t.Errorf("statAlive(%q, %v, proc=%v) = %v, want %v", tt.stat, tt.err, tt.proc, got, tt.want)
			}
		})
	}
}

func TestAliveOfThisProcessAndOfNone(t *testing.T) {
	if !alive(os.Getpid()) {
		t.Error("alive(own pid) = false")
	}
	// Pids above the kernel's limit never exist.
	if alive(1 << 30) {
		t.Error("alive(1<<30) = true")
	}
}

// TestKilledProcessFreesItsPort: once alive says a SIGKILLed process
// with many threads is gone, its listening port can be bound again at
// once (a zombie whose other threads are still exiting holds it).
func TestKilledProcessFreesItsPort(t *testing.T) {
	if addr := os.Getenv("LOCALCLUSTER_HELPER_LISTEN"); addr != "" {
		listenAndSpin(addr)
		return
	}
	if !procMounted() {
		t.Skip("no /proc")
	}
	for round := range 10 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessFreesItsPort$")
		cmd.Env = append(os.Environ(), "LOCALCLUSTER_HELPER_LISTEN="+addr)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("helper said %q", line)
		}
		pid := cmd.Process.Pid
		syscall.Kill(pid, syscall.SIGKILL)
		for alive(pid) {
			time.Sleep(time.Millisecond)
		}
		again, err := net.Listen("tcp", addr)
		cmd.Wait()
		if err != nil {
			t.Fatalf("round %d: the killed process's port after alive said it was gone: %v", round, err)
		}
		again.Close()
	}
}

// listenAndSpin is the helper process of TestKilledProcessFreesItsPort:
// a listener, connections to it, a heap and goroutines that keep many
// threads busy, until it is killed.
func listenAndSpin(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		os.Exit(2)
	}
	go func() {
		for {
			if _, err := ln.Accept(); err != nil {
				return
			}
		}
	}()
	for range 4 {
		if _, err := net.Dial("tcp", addr); err != nil {
			os.Exit(2)
		}
	}
	// Memory to free at exit, as a broker has: the thread that frees it
	// exits last, holding the files.
	heap := make([]byte, 256<<20)
	for i := 0; i < len(heap); i += 4096 {
		heap[i] = 1
	}
	for range 16 {
		go func() {
			for {
				syscall.Getpid()
			}
		}()
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
		heap[0]++
	}
}

// TestServeArgsConsole: node 1 serves the console with every other
// node's metrics endpoint; every node serves metrics on its own port;
// without a console no node gets console flags but a single node, which
// is told to keep its default console off.
func TestServeArgsConsole(t *testing.T) {
	spec := Spec{Nodes: 3, BasePort: 9092, Binary: "weir", MetricsBasePort: 9098, Console: "127.0.0.1:8080"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	one := strings.Join(spec.ServeArgs("d", 1), " ")
	if !strings.Contains(one, "--metrics-listen 127.0.0.1:9098") || !strings.Contains(one, "--console-listen 127.0.0.1:8080 --console-metrics 2=127.0.0.1:9099,3=127.0.0.1:9100") {
		t.Errorf("node 1: %s", one)
	}
	three := strings.Join(spec.ServeArgs("d", 3), " ")
	if !strings.Contains(three, "--metrics-listen 127.0.0.1:9100") || strings.Contains(three, "console") {
		t.Errorf("node 3: %s", three)
	}
	single := strings.Join(Spec{Nodes: 1, BasePort: 9092, Binary: "weir"}.ServeArgs("d", 1), " ")
	if !strings.Contains(single, "--console-listen off") || strings.Contains(single, "metrics") {
		t.Errorf("single node: %s", single)
	}
	if err := (Spec{Nodes: 3, BasePort: 9092, Binary: "weir", Console: "nope"}).Validate(); err == nil {
		t.Error("a console address without a port was accepted")
	}
}

// TestServeArgsPprof: with PprofBasePort every node serves pprof on its
// own port, and without it none does; a range past 65535 is refused.
func TestServeArgsPprof(t *testing.T) {
	spec := Spec{Nodes: 3, BasePort: 9092, Binary: "weir", PprofBasePort: 6060}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]string{1: "--pprof-listen 127.0.0.1:6060", 2: "--pprof-listen 127.0.0.1:6061", 3: "--pprof-listen 127.0.0.1:6062"} {
		if got := strings.Join(spec.ServeArgs("d", n), " "); !strings.Contains(got, want) {
			t.Errorf("node %d: %s, want %s", n, got, want)
		}
	}
	if got := strings.Join(Spec{Nodes: 3, BasePort: 9092, Binary: "weir"}.ServeArgs("d", 2), " "); strings.Contains(got, "pprof") {
		t.Errorf("no pprof port asked for: %s", got)
	}
	if err := (Spec{Nodes: 3, BasePort: 9092, Binary: "weir", PprofBasePort: 65534}).Validate(); err == nil {
		t.Error("pprof ports past 65535 were accepted")
	}
}

// Pause stops a node's process until Resume; Kill ends it. A sleep stands
// in for the node: only the pid file matters.
func TestPauseResumeKill(t *testing.T) {
	dir := t.TempDir()
	if err := save(dir, Spec{Nodes: 1, BasePort: 20000, Binary: "weir"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	if err := os.MkdirAll(NodeDir(dir, 1), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(NodeDir(dir, 1), "pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Pause(dir, 1); err != nil {
		t.Fatal(err)
	}
	if s := procState(cmd.Process.Pid); s != 'T' {
		t.Fatalf("state after Pause %q, want T", s)
	}
	if err := Resume(dir, 1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for procState(cmd.Process.Pid) == 'T' {
		if time.Now().After(deadline) {
			t.Fatal("still stopped after Resume")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := Pause(dir, 2); err == nil {
		t.Fatal("Pause of a node that does not exist succeeded")
	}
	if err := Kill(dir, 1); err != nil {
		t.Fatal(err)
	}
	if err := Pause(dir, 1); err == nil {
		t.Fatal("Pause of a killed node succeeded")
	}
}

// TestServeArgsProtocol: a spec's security protocol prefixes every
// node's --listen; the controller bootstrap and the clients' bootstrap
// stay host:port lists; an unknown protocol is refused.
func TestServeArgsProtocol(t *testing.T) {
	for _, tc := range []struct {
		protocol, listen, err string
	}{
		{"", "--listen 127.0.0.1:9094 ", ""},
		{"PLAINTEXT", "--listen PLAINTEXT://127.0.0.1:9094 ", ""},
		{"SASL_SSL", "--listen SASL_SSL://127.0.0.1:9094 ", ""},
		{"SSL", "--listen SSL://127.0.0.1:9094 ", ""},
		{"TLS", "", `security protocol "TLS"`},
		{"sasl_ssl", "", `security protocol "sasl_ssl"`},
	} {
		spec := Spec{Nodes: 3, BasePort: 9092, Binary: "weir", Protocol: tc.protocol}
		err := spec.Validate()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("protocol %q: Validate() = %v, want an error with %q", tc.protocol, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("protocol %q: %v", tc.protocol, err)
			continue
		}
		args := strings.Join(spec.ServeArgs("d", 3), " ")
		if !strings.Contains(args, tc.listen) || !strings.Contains(args, "--controller-bootstrap 127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094") {
			t.Errorf("protocol %q: node 3's flags %s", tc.protocol, args)
		}
		if b := spec.Bootstrap(); b != "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094" {
			t.Errorf("protocol %q: bootstrap %s", tc.protocol, b)
		}
	}
}
