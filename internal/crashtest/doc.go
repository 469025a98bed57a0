// Package crashtest runs a child process that writes until it is killed
// with SIGKILL, for crash-recovery tests: the test binary re-executes
// itself as the writer (selected by an environment variable its TestMain
// checks), prints one line per acknowledged write, and the test kills it
// at a moment of its choosing and collects every line it printed.
//
// It owns nothing but the child it starts, which Kill always waits for.
//
// Concurrency: Kill starts one goroutine that reads the child's output
// and ends when the child's stdout closes; Kill returns after it has and
// after the child was waited for.
package crashtest
