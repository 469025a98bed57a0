package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Login connects to the cluster as the Kafka principal a person's
// credentials authenticate (SASL): the Cluster it returns sends every
// request as that principal, so the console shows and does exactly what
// the principal's ACLs allow. ErrBadCredentials says the broker refused
// them; other errors say the cluster could not be asked.
type Login func(ctx context.Context, user, password string) (Cluster, func(), error)

// ErrBadCredentials is a Login's answer to credentials the broker
// refused.
var ErrBadCredentials = errors.New("console: the broker refused the user name or password")

// sessionCookie names the cookie that carries a login session's token.
const sessionCookie = "weir_session"

// sessionIdle is how long a login session lasts without a request.
const sessionIdle = 8 * time.Hour

// space is what a request reads and acts through: the console's own
// cluster and hub, or a login session's.
type space struct {
	cluster Cluster
	hub     *hub
	user    string // the login's user; empty without one
}

// session is one person's login: a cluster client as their principal
// and a hub of their own (its views are collected as that principal).
type session struct {
	space
	close    func()
	lastUsed time.Time
}

// sessions holds the login sessions of a console with Login set.
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

type spaceKey struct{}

// hubFor and clusterFor are the request's hub and cluster: its login
// session's when the console requires a login.
func (c *Console) hubFor(ctx context.Context) *hub {
	if sp, ok := ctx.Value(spaceKey{}).(*space); ok {
		return sp.hub
	}
	return c.hub
}

func (c *Console) clusterFor(ctx context.Context) Cluster {
	if sp, ok := ctx.Value(spaceKey{}).(*space); ok {
		return sp.cluster
	}
	return c.cfg.Cluster
}

// withSession serves r when it carries a live login session, with the
// session's space in its context; otherwise a page is sent to the login
// form and anything else is answered 401. The login form, its post, the
// logout and the static assets need no session.
func (c *Console) withSession(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/login":
		c.login(w, r)
		return
	case "/logout":
		c.logout(w, r)
		return
	case "/favicon.ico":
		c.mux.ServeHTTP(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/static/") {
		c.mux.ServeHTTP(w, r)
		return
	}
	s := c.sessionOf(r)
	if s == nil {
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/events" && r.URL.Path != "/records" {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		writeJSON(w, http.StatusUnauthorized, result{Message: "log in first: the console acts as a Kafka principal"})
		return
	}
	c.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), spaceKey{}, &s.space)))
}

// sessionOf is r's live session, nil when it has none; expired sessions
// are closed on the way.
func (c *Console) sessionOf(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	now := c.cfg.Now()
	var expired []*session
	c.logins.mu.Lock()
	for id, s := range c.logins.byID {
		if now.Sub(s.lastUsed) > sessionIdle {
			delete(c.logins.byID, id)
			expired = append(expired, s)
		}
	}
	var s *session
	if err == nil {
		if s = c.logins.byID[ck.Value]; s != nil {
			s.lastUsed = now
		}
	}
	c.logins.mu.Unlock()
	for _, e := range expired {
		e.end()
	}
	return s
}

// end stops a session's hub and closes its cluster client.
func (s *session) end() {
	s.hub.close()
	if s.close != nil {
		s.close()
	}
}

// maxLoginForm bounds the login form's body.
const maxLoginForm = 16 << 10

// login shows the form (GET) or checks the credentials with the broker
// (POST): a client authenticated as the user is the new session's.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if r.Method != http.MethodPost {
		c.render(w, r, http.StatusOK, "login", pageData{Title: "Log in", Extra: next})
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			http.Error(w, "weir console: a login must come from the console's own page", http.StatusForbidden)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginForm)
	if err := r.ParseForm(); err != nil {
		c.render(w, r, http.StatusBadRequest, "login", pageData{Title: "Log in", Err: "reading the form: " + err.Error(), Extra: next})
		return
	}
	user, password := r.PostForm.Get("user"), r.PostForm.Get("password")
	next = safeNext(r.PostForm.Get("next"))
	if user == "" || password == "" {
		c.render(w, r, http.StatusBadRequest, "login", pageData{Title: "Log in", Err: "a user name and a password are needed", Extra: next})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.Timeout)
	defer cancel()
	cl, closeCl, err := c.cfg.Login(ctx, user, password)
	if err != nil {
		status, msg := http.StatusBadGateway, "the cluster could not be asked: "+err.Error()
		if errors.Is(err, ErrBadCredentials) {
			status, msg = http.StatusUnauthorized, "login failed: the broker refused the user name or password"
		}
		c.cfg.Logger.Info("console: login refused", "user", user, "err", err)
		c.render(w, r, status, "login", pageData{Title: "Log in", Err: msg, Extra: next})
		return
	}
	id, err := newSessionID()
	if err != nil {
		closeCl()
		http.Error(w, "weir console: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s := &session{space: space{cluster: cl, hub: newHub(collector{cluster: cl, metrics: c.cfg.Metrics}, c.cfg.Logger, c.cfg.Now, c.cfg.Interval, c.cfg.Timeout), user: user},
		close: closeCl, lastUsed: c.cfg.Now()}
	c.logins.mu.Lock()
	closed := c.logins.byID == nil
	if !closed {
		c.logins.byID[id] = s
	}
	c.logins.mu.Unlock()
	if closed {
		s.end()
		http.Error(w, "weir console: closing", http.StatusServiceUnavailable)
		return
	}
	c.cfg.Logger.Info("console: logged in", "user", user)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the request's session (POST only, from the console's page).
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "weir console: log out with the page's button", http.StatusMethodNotAllowed)
		return
	}
	if ck, err := r.Cookie(sessionCookie); err == nil {
		c.logins.mu.Lock()
		s := c.logins.byID[ck.Value]
		delete(c.logins.byID, ck.Value)
		c.logins.mu.Unlock()
		if s != nil {
			s.end()
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// closeSessions ends every session; later logins are refused.
func (c *Console) closeSessions() {
	c.logins.mu.Lock()
	all := c.logins.byID
	c.logins.byID = nil
	c.logins.mu.Unlock()
	for _, s := range all {
		s.end()
	}
}

// safeNext keeps a post-login destination on the console: a path of its
// own, never another site.
func safeNext(next string) string {
	if next == "" || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, "\\") {
		return "/"
	}
	return next
}

func newSessionID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
