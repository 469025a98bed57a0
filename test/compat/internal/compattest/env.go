package compattest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// BootstrapEnv names the variable holding the broker address(es), comma separated.
const BootstrapEnv = "WEIR_BOOTSTRAP"

// RestartEnv names the variable holding a shell command that restarts the
// broker in place (same address, same data). The durability suite runs it with
// one more argument: "graceful" (SIGTERM) or "kill" (SIGKILL). It returns once
// the broker serves again.
const RestartEnv = "WEIR_RESTART_CMD"

// Seeds returns the broker addresses from WEIR_BOOTSTRAP.
func Seeds() []string {
	v := strings.TrimSpace(os.Getenv(BootstrapEnv))
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// Main is the TestMain body of every compatibility package: it refuses to run
// without a broker address rather than letting tests skip or dial a default.
// Extra names variables the package needs besides WEIR_BOOTSTRAP.
func Main(m *testing.M, extra ...string) {
	for _, name := range append([]string{BootstrapEnv}, extra...) {
		if strings.TrimSpace(os.Getenv(name)) == "" {
			fmt.Fprintf(os.Stderr, "%s is not set: these tests drive a live broker; run them through test/compat/run "+
				"(or set %s yourself, see test/compat/README.md)\n", name, name)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}
