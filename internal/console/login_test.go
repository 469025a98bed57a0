package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loginConsole is a console that requires a login: alice and bob (password
// "pw") each get a cluster of their own, as their principal would see it.
func loginConsole(t *testing.T, now ...func() time.Time) (*httptest.Server, map[string]*fakeCluster, *int) {
	t.Helper()
	clock := time.Now
	if len(now) > 0 {
		clock = now[0]
	}
	alice, bob := newFake(), newFake()
	alice.addTopic("alice-topic", 1)
	bob.addTopic("bob-topic", 1)
	users := map[string]*fakeCluster{"alice": alice, "bob": bob}
	closed := new(int)
	c, err := New(Config{Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, Now: clock,
		Login: func(_ context.Context, user, password string) (Cluster, func(), error) {
			f, ok := users[user]
			if !ok || password != "pw" {
				return nil, nil, ErrBadCredentials
			}
			return f, func() { *closed++ }, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(func() { srv.Close(); c.Close() })
	return srv, users, closed
}

// browser is a client with its own cookies that does not follow
// redirects (each answer is checked as it comes).
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, cl *http.Client, method, u string, form url.Values, header ...string) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestLoginMapsToPrincipal: with Login set, nothing but the form and the
// assets is served without a session; a refused password gets a clear
// message and no session; each person's session reads through their own
// cluster (their principal's view: alice sees her topic, not bob's); a
// logout ends the session and closes its client; a post-login
// destination never leaves the console, and a login posted from another
// site is refused.
func TestLoginMapsToPrincipal(t *testing.T) {
	srv, _, closed := loginConsole(t)
	anon := browser(t)
	if code, _, h := do(t, anon, "GET", srv.URL+"/topic?name=x", nil); code != http.StatusSeeOther || h.Get("Location") != "/login?next=%2Ftopic%3Fname%3Dx" {
		t.Fatalf("a page without a session: %d to %q, want 303 to the login form", code, h.Get("Location"))
	}
	if code, body, _ := do(t, anon, "GET", srv.URL+"/api/view?view=overview", nil); code != http.StatusUnauthorized || !strings.Contains(body, "log in first") {
		t.Fatalf("an API call without a session: %d %s", code, body)
	}
	if code, _, _ := do(t, anon, "POST", srv.URL+"/api/topics/create", url.Values{"name": {"x"}}, "X-Weir-Console", "1"); code != http.StatusUnauthorized {
		t.Fatalf("an action without a session: %d, want 401", code)
	}
	if code, body, _ := do(t, anon, "GET", srv.URL+"/login", nil); code != http.StatusOK || !strings.Contains(body, `name="password"`) {
		t.Fatalf("the login form: %d", code)
	}
	if code, _, _ := do(t, anon, "GET", srv.URL+"/static/console.css", nil); code != http.StatusOK {
		t.Fatalf("static assets without a session: %d", code)
	}

	if code, body, _ := do(t, anon, "POST", srv.URL+"/login", url.Values{"user": {"alice"}, "password": {"wrong"}}); code != http.StatusUnauthorized || !strings.Contains(body, "login failed") {
		t.Fatalf("a wrong password: %d", code)
	}
	if code, _, _ := do(t, anon, "GET", srv.URL+"/api/view?view=overview", nil); code != http.StatusUnauthorized {
		t.Fatal("a refused login left a session")
	}
	if code, _, _ := do(t, anon, "POST", srv.URL+"/login", url.Values{"user": {"alice"}, "password": {"pw"}}, "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Fatalf("a login posted from another site: %d, want 403", code)
	}

	alice, bob := browser(t), browser(t)
	code, _, h := do(t, alice, "POST", srv.URL+"/login", url.Values{"user": {"alice"}, "password": {"pw"}, "next": {"//evil.example/x"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("alice's login: %d to %q, want 303 to /", code, h.Get("Location"))
	}
	if code, _, h := do(t, bob, "POST", srv.URL+"/login", url.Values{"user": {"bob"}, "password": {"pw"}, "next": {"/groups"}}); code != http.StatusSeeOther || h.Get("Location") != "/groups" {
		t.Fatalf("bob's login: %d to %q", code, h.Get("Location"))
	}
	for _, tc := range []struct {
		who      *http.Client
		name     string
		see, not string
	}{{alice, "alice", "alice-topic", "bob-topic"}, {bob, "bob", "bob-topic", "alice-topic"}} {
		code, body, _ := do(t, tc.who, "GET", srv.URL+"/", nil)
		if code != http.StatusOK || !strings.Contains(body, tc.see) || strings.Contains(body, tc.not) || !strings.Contains(body, tc.name) {
			t.Fatalf("%s's overview: %d, shows %s %v, shows %s %v, names the user %v", tc.name, code, tc.see, strings.Contains(body, tc.see), tc.not, strings.Contains(body, tc.not), strings.Contains(body, tc.name))
		}
	}

	if code, _, h := do(t, alice, "POST", srv.URL+"/logout", url.Values{}); code != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", code, h.Get("Location"))
	}
	if code, _, _ := do(t, alice, "GET", srv.URL+"/api/view?view=overview", nil); code != http.StatusUnauthorized {
		t.Fatalf("after logout: %d, want 401", code)
	}
	if *closed != 1 {
		t.Fatalf("%d clients closed after one logout, want 1", *closed)
	}
	if code, _, _ := do(t, bob, "GET", srv.URL+"/api/view?view=overview", nil); code != http.StatusOK {
		t.Fatalf("bob after alice's logout: %d", code)
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/topic?name=a": "/topic?name=a", "//evil": "/", "http://evil": "/", "/\\evil": "/", "groups": "/"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestIdleSessionEnds: a session unused for sessionIdle ends at the next
// request of anyone, its client closed.
func TestIdleSessionEnds(t *testing.T) {
	var at atomic.Int64
	at.Store(time.Now().UnixNano())
	srv, _, closed := loginConsole(t, func() time.Time { return time.Unix(0, at.Load()) })
	alice := browser(t)
	if code, _, _ := do(t, alice, "POST", srv.URL+"/login", url.Values{"user": {"alice"}, "password": {"pw"}}); code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	at.Add(int64(sessionIdle - time.Minute))
	if code, _, _ := do(t, alice, "GET", srv.URL+"/api/view?view=overview", nil); code != http.StatusOK {
		t.Fatalf("a session used within its idle time: %d", code)
	}
	at.Add(int64(sessionIdle + time.Minute))
	if code, _, _ := do(t, browser(t), "GET", srv.URL+"/login", nil); code != http.StatusOK || *closed != 0 {
		t.Fatalf("the login form: %d, %d clients closed (the form needs no session lookup)", code, *closed)
	}
	if code, _, _ := do(t, alice, "GET", srv.URL+"/api/view?view=overview", nil); code != http.StatusUnauthorized || *closed != 1 {
		t.Fatalf("an idle session: %d, %d clients closed; want 401 and 1", code, *closed)
	}
}
