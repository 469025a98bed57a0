package crashtest

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Kill starts the test binary with env added to its environment, passes
// each line the child prints to onLine, kills it with SIGKILL after
// killAfter, passes the lines it printed before dying, and waits for it.
// The child exiting by itself before the kill fails the test.
func Kill(t testing.TB, env []string, killAfter time.Duration, onLine func(string)) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	killAt := time.After(killAfter)
	for killed := false; !killed; {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("crashtest: the child exited before the kill")
			}
			onLine(line)
		case <-killAt:
			cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	for line := range lines { // written before the kill
		onLine(line)
	}
	cmd.Wait()
}
