package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser is headless Chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: JSON messages ending in NUL on file
// descriptors 3 and 4), so no websocket and no dependency is needed.
type browser struct {
	cmd     *exec.Cmd
	in      *os.File // to the browser (its fd 3)
	out     *os.File // from the browser (its fd 4)
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	events  chan cdpEvent
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage
	Err    error
}

type cdpEvent struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// chromium finds the browser, or "" when it is not installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	toR, toW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--remote-debugging-pipe", "--user-data-dir="+t.TempDir(), "about:blank")
	cmd.ExtraFiles = []*os.File{toR, fromW}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toR.Close()
	fromW.Close()
	b := &browser{cmd: cmd, in: toW, out: fromR, pending: map[int]chan cdpReply{}, events: make(chan cdpEvent, 1024), done: make(chan struct{})}
	go b.read()
	t.Cleanup(func() {
		b.in.Close()
		cmd.Process.Kill()
		cmd.Wait()
		<-b.done
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", tailOf(stderr.String(), 30))
		}
	})
	return b
}

func tailOf(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if !strings.Contains(l, "dbus") { // no system bus in a container: noise
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (b *browser) read() {
	defer close(b.done)
	r := bufio.NewReaderSize(b.out, 1<<20)
	for {
		msg, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				ch <- cdpReply{Err: errors.New("browser closed")}
				delete(b.pending, id)
			}
			b.mu.Unlock()
			close(b.events)
			return
		}
		msg = msg[:len(msg)-1]
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
			cdpEvent
		}
		if json.Unmarshal(msg, &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.pending[m.ID]
			delete(b.pending, m.ID)
			b.mu.Unlock()
			if ch != nil {
				rep := cdpReply{Result: m.Result}
				if m.Error != nil {
					rep.Err = errors.New(m.Error.Message)
				}
				ch <- rep
			}
			continue
		}
		select {
		case b.events <- m.cdpEvent:
		default: // nobody reads this many events; drop
		}
	}
}

// call sends one command (to a page's session, or the browser with "")
// and decodes its result into out.
func (b *browser) call(ctx context.Context, session, method string, params, out any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if params == nil {
		msg["params"] = map[string]any{}
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, _ := json.Marshal(msg)
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return err
	}
	select {
	case rep := <-ch:
		if rep.Err != nil {
			return fmt.Errorf("%s: %w", method, rep.Err)
		}
		if out != nil {
			return json.Unmarshal(rep.Result, out)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// page is one tab; it gathers the page's console errors as they come.
type page struct {
	b       *browser
	session string
	mu      sync.Mutex
	errs    []string
	loads   chan struct{}
}

func (b *browser) newPage(ctx context.Context, t *testing.T) *page {
	t.Helper()
	var target struct{ TargetID string }
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	p := &page{b: b, session: att.SessionID, loads: make(chan struct{}, 16)}
	go p.watch()
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(ctx, p.session, m, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	// A laptop screen.
	if err := b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1366, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// watch keeps the page's errors: uncaught exceptions, console.error and
// the browser's own error log (failed loads, refused scripts or styles).
func (p *page) watch() {
	for ev := range p.b.events {
		if ev.SessionID != p.session {
			continue
		}
		var msg string
		switch ev.Method {
		case "Page.loadEventFired":
			select {
			case p.loads <- struct{}{}:
			default:
			}
		case "Runtime.exceptionThrown":
			var e struct {
				ExceptionDetails struct {
					Text      string
					Exception struct{ Description string }
				}
			}
			json.Unmarshal(ev.Params, &e)
			msg = "exception: " + e.ExceptionDetails.Text + " " + e.ExceptionDetails.Exception.Description
		case "Runtime.consoleAPICalled":
			var e struct {
				Type string
				Args []struct{ Value any }
			}
			json.Unmarshal(ev.Params, &e)
			if e.Type == "error" || e.Type == "assert" {
				msg = fmt.Sprintf("console.%s: %v", e.Type, e.Args)
			}
		case "Log.entryAdded":
			var e struct {
				Entry struct{ Level, Text, URL string }
			}
			json.Unmarshal(ev.Params, &e)
			if e.Entry.Level == "error" {
				msg = "log: " + e.Entry.Text + " " + e.Entry.URL
			}
		}
		if msg != "" {
			p.mu.Lock()
			p.errs = append(p.errs, msg)
			p.mu.Unlock()
		}
	}
}

func (p *page) errors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errs...)
}

// open navigates and waits for the load event.
func (p *page) open(ctx context.Context, url string) error {
	for len(p.loads) > 0 {
		<-p.loads
	}
	var nav struct{ ErrorText string }
	if err := p.b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigating to %s: %s", url, nav.ErrorText)
	}
	select {
	case <-p.loads:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s did not load: %w", url, ctx.Err())
	}
}

// eval runs a JavaScript expression (awaiting a promise) and decodes its
// value into out.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	if err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(r.Result.Value) > 0 {
		return json.Unmarshal(r.Result.Value, out)
	}
	return nil
}

// screenshot saves the whole page as a PNG.
func (p *page) screenshot(ctx context.Context, path string) error {
	var r struct{ Data string }
	if err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// waitFor polls a JavaScript condition until it is true.
func (p *page) waitFor(ctx context.Context, t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		err := p.eval(ctx, "!!("+expr+")", &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("waiting for %s (%s): %v", what, expr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
