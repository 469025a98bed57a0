package scenario

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// artifactDir is where the browser tests keep their screenshots: under
// bench/out, which git ignores.
func artifactDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "bench", "out", "scenario-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// chromiumBinary finds Debian's chromium. scripts/test installs it and
// sets WEIR_REQUIRE_BROWSER, so there a missing browser fails the test;
// elsewhere the browser checks are skipped, saying why.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_BROWSER") == "1" {
		t.Fatal("chromium not found (apt-get install -y chromium) and WEIR_REQUIRE_BROWSER is set")
	}
	t.Skip("chromium not installed: the report's browser check needs it (scripts/test installs it)")
	return ""
}

// headless runs chromium headless, isolated (fresh profile, no network
// features, no GPU), on url with extra flags, and returns stdout and the
// log it wrote to stderr.
func headless(t *testing.T, bin, url string, extra ...string) (stdout, log string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--window-size=1000,3000"}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, tailLines(errb.String(), 30))
	}
	return out.String(), errb.String()
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// checkReportInBrowser opens a report in headless Chromium: the page
// logs no error and requests nothing, the DOM the browser built holds
// charts that draw res's ticks (svgcheck on the browser's serialisation,
// values against the ticks), and the screenshot (kept as name.png in the
// artifact folder) has each series' colour on it.
func checkReportInBrowser(t *testing.T, path string, res *RunResult, name string) {
	t.Helper()
	bin := chromiumBinary(t)
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	url := "file://" + abs
	dom, log := headless(t, bin, url, "--dump-dom")
	for _, line := range strings.Split(log, "\n") {
		// Console messages and page errors show as CONSOLE lines; a
		// request for anything but the file would be a net:: line.
		if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") || (strings.Contains(line, "net::") && !strings.Contains(line, "dbus")) {
			t.Errorf("browser log: %s", line)
		}
	}
	charts := ChartsOf(dom)
	want := len(ChartsOf(mustRead(t, path)))
	if len(charts) != want || want == 0 {
		t.Fatalf("the browser's DOM has %d charts, the file %d", len(charts), want)
	}
	if checked := CheckCharts(t, charts, res); len(checked) < 3 {
		t.Fatalf("only %d chart lines checked against the ticks: %v", len(checked), checked)
	}
	shot := filepath.Join(artifactDir(t), name+".png")
	os.Remove(shot)
	headless(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The first two series colours are on every multi-line chart.
	for _, c := range palette[:2] {
		if n := countColour(img, c); n < 20 {
			t.Errorf("series colour %s on %d pixels of the screenshot, want the lines drawn", c, n)
		}
	}
	t.Logf("screenshot: %s", shot)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countColour counts the pixels within a small distance of #rrggbb.
func countColour(img image.Image, hex string) int {
	var want color.RGBA
	if _, err := fmt.Sscanf(hex, "#%02x%02x%02x", &want.R, &want.G, &want.B); err != nil {
		return 0
	}
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, want.R) && near(g>>8, want.G) && near(bl>>8, want.B) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool { return a+12 >= uint32(b) && a <= uint32(b)+12 }

// TestReportInChromium writes a report of a known run and checks it in
// the browser.
func TestReportInChromium(t *testing.T) {
	res := sampleResult()
	dir := t.TempDir()
	if err := writeRunReports(dir, res); err != nil {
		t.Fatal(err)
	}
	checkReportInBrowser(t, filepath.Join(dir, ReportStem(res)+".html"), res, "sample-report")
}
