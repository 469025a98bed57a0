package share

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Transcript files (testdata/*.txt) hold cases of the form
//
//	command arg key=value ...
//	----
//	expected output
//	(blank line)
//
// Lines starting with '#' between cases are comments. Running the tests
// with -rewrite writes the actual output back into the files; review the
// diff before committing it.
var rewrite = flag.Bool("rewrite", false, "rewrite transcript expectations with the actual output")

type tcase struct {
	line int
	cmd  string
	args []string
	want string
}

// arg returns the value of key=value in c's arguments, or def.
func (c *tcase) arg(key, def string) string {
	for _, a := range c.args {
		if k, v, ok := strings.Cut(a, "="); ok && k == key {
			return v
		}
	}
	return def
}

// bare returns the arguments that are not key=value.
func (c *tcase) bare() []string {
	var out []string
	for _, a := range c.args {
		if !strings.Contains(a, "=") {
			out = append(out, a)
		}
	}
	return out
}

// runTranscript runs every case of path through do, which returns the
// output of one command (without a trailing newline).
func runTranscript(t *testing.T, path string, do func(t *testing.T, c *tcase) string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		out     strings.Builder // the file as it should be
		cases   []*tcase
		pending *tcase
		inWant  bool
		wantBuf []string
		lineNo  int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		switch {
		case inWant:
			if line == "" {
				pending.want = strings.Join(wantBuf, "\n")
				cases = append(cases, pending)
				pending, inWant, wantBuf = nil, false, nil
				continue
			}
			wantBuf = append(wantBuf, line)
		case pending != nil:
			if line != "----" {
				t.Fatalf("%s:%d: expected ---- after the command", path, lineNo)
			}
			inWant = true
		case line == "" || strings.HasPrefix(line, "#"):
			cases = append(cases, &tcase{line: -1, want: line}) // kept verbatim
		default:
			fields := strings.Fields(line)
			pending = &tcase{line: lineNo, cmd: fields[0], args: fields[1:]}
		}
	}
	f.Close()
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if pending != nil {
		pending.want = strings.Join(wantBuf, "\n")
		cases = append(cases, pending)
	}
	for _, c := range cases {
		if c.line < 0 {
			out.WriteString(c.want + "\n")
			continue
		}
		got := do(t, c)
		if strings.Contains(got, "\n\n") || strings.HasSuffix(got, "\n") {
			t.Fatalf("%s:%d: output has a blank line", path, c.line)
		}
		if got != c.want && !*rewrite {
			t.Errorf("%s:%d: %s %s\n--- want\n%s\n--- got\n%s", path, c.line, c.cmd, strings.Join(c.args, " "), c.want, got)
		}
		fmt.Fprintf(&out, "%s %s\n----\n%s\n\n", c.cmd, strings.Join(c.args, " "), got)
	}
	if *rewrite {
		text := strings.ReplaceAll(out.String(), " \n----", "\n----")
		if err := os.WriteFile(path, []byte(strings.TrimRight(text, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// transcripts runs each testdata file matching pattern as a subtest.
func transcripts(t *testing.T, pattern string, do func(t *testing.T) func(t *testing.T, c *tcase) string) {
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts match %s", pattern)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			runTranscript(t, path, do(t))
		})
	}
}
