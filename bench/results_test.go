package bench

import (
	"bytes"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// resultsDir is where quoted runs are kept, relative to the repository.
const resultsDir = "bench/results"

// skipDirs are never read as documents: version control, caches, build
// and run outputs, and the results themselves.
var skipDirs = map[string]bool{
	".git": true, ".cache": true, "bench/out": true, resultsDir: true,
	"test/compat/java/target": true, "node_modules": true,
}

// resultRef matches a path under bench/results as documents write it: up
// to a space, quote, backtick or closing bracket.
var resultRef = regexp.MustCompile("bench/results/[^\\s`'\"()\\[\\]]+")

// documents returns the text of every file under root that is not in
// skipDirs and holds no NUL byte, keyed by its slash path.
func documents(t *testing.T, root string) map[string]string {
	t.Helper()
	docs := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDirs[rel] || (rel != "." && strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte{0}) {
			docs[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// expandBraces turns "a-{x,y}.txt" into "a-x.txt" and "a-y.txt" (one
// brace group, the only form the documents use).
func expandBraces(s string) []string {
	i, j := strings.IndexByte(s, '{'), strings.IndexByte(s, '}')
	if i < 0 || j < i {
		return []string{s}
	}
	var out []string
	for alt := range strings.SplitSeq(s[i+1:j], ",") {
		out = append(out, s[:i]+alt+s[j+1:])
	}
	return out
}

// refs lists the bench/results names a text mentions, trailing
// punctuation trimmed; templates (compare-<date>.md, $OUT/...) are left
// out.
func refs(text string) []string {
	var out []string
	for _, m := range resultRef.FindAllString(text, -1) {
		name := strings.TrimRight(strings.TrimPrefix(m, resultsDir+"/"), ".,:;")
		if name == "" || strings.ContainsAny(name, "<>$") {
			continue
		}
		out = append(out, expandBraces(name)...)
	}
	return out
}

// quoted reports which of names some document quotes: by name, or by a
// bench/results/ glob. A result that only another result names is not
// quoted: its figures reach no reader.
func quoted(docs map[string]string, names []string) map[string]bool {
	q := map[string]bool{}
	for _, text := range docs {
		for _, n := range names {
			if strings.Contains(text, n) {
				q[n] = true
			}
		}
		for _, r := range refs(text) {
			for _, n := range names {
				if ok, _ := path.Match(r, n); ok {
					q[n] = true
				}
			}
		}
	}
	return q
}

// TestResultsAreQuoted keeps bench/results to the runs documents quote:
// every file there is named by a document outside bench/results, and
// every file a document names is there.
func TestResultsAreQuoted(t *testing.T) {
	root := ".."
	ents, err := os.ReadDir(filepath.Join(root, resultsDir))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			t.Errorf("%s/%s is a directory; results are flat files", resultsDir, e.Name())
			continue
		}
		names = append(names, e.Name())
	}
	docs := documents(t, root)
	q := quoted(docs, names)
	for _, n := range names {
		if !q[n] {
			t.Errorf("%s/%s is quoted by no document: name it where its figures are used, or git rm it (history keeps it) and write new runs to bench/out", resultsDir, n)
		}
	}
	for doc, text := range docs {
		for _, r := range refs(text) {
			if !slices.ContainsFunc(names, func(n string) bool { ok, _ := path.Match(r, n); return ok }) {
				t.Errorf("%s names %s/%s, which is not there", doc, resultsDir, r)
			}
		}
	}
}

// The matcher finds names, globs and brace lists in documents, and
// leaves templates, unnamed files and files only a result names alone.
func TestQuoted(t *testing.T) {
	names := []string{"a-1.md", "a-1.txt", "b-0513.txt", "b-0515.txt", "c-x.csv", "c-y.csv", "d.txt", "e.svg", "f.txt"}
	// The paths are put together so that this file quotes nothing itself.
	const rd = resultsDir + "/"
	docs := map[string]string{
		"README.md":  "see `" + rd + "a-1.md` and " + rd + "b-{0513,0515}.txt.",
		"x.go":       "// (" + rd + "c-*)",
		"bench/run":  "# writes " + rd + "compare-<date>.md and $OUT/run.txt",
		"notes/n.md": "nothing here",
	}
	// a-1.txt, d.txt, e.svg and f.txt are named by no document.
	got := quoted(docs, names)
	want := map[string]bool{"a-1.md": true, "b-0513.txt": true, "b-0515.txt": true, "c-x.csv": true, "c-y.csv": true}
	for _, n := range names {
		if got[n] != want[n] {
			t.Errorf("quoted[%s] = %v, want %v", n, got[n], want[n])
		}
	}
	if r := refs(docs["bench/run"]); len(r) != 0 {
		t.Errorf("refs of templates = %q, want none", r)
	}
	if r := refs(docs["README.md"]); !slices.Equal(r, []string{"a-1.md", "b-0513.txt", "b-0515.txt"}) {
		t.Errorf("refs = %q", r)
	}
}
