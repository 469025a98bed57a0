package console

import (
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Config configures a Console.
type Config struct {
	// Cluster is how the console reads and acts (required unless Login
	// is set).
	Cluster Cluster
	// Login, when set, makes the console require a login: each person's
	// credentials give a Cluster of their own, as their Kafka principal
	// (with security on, so that the console shows only what the
	// principal may describe). Cluster is then unused.
	Login Login
	// Metrics reads brokers' own counters; nil shows no rates.
	Metrics Metrics
	// Logger (default: discard).
	Logger *slog.Logger
	// Interval is the shortest time between two collections of a watched
	// view (default 2 s).
	Interval time.Duration
	// Timeout bounds one collection and one action (default 15 s).
	Timeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Hosts are the Host headers accepted besides loopback names and
	// addresses (the address the console is reached at when it does not
	// listen on loopback). A request naming another host is refused,
	// so a web page cannot reach the console by renaming itself to a
	// loopback address (DNS rebinding).
	Hosts []string
}

// Console serves the web console. It holds no connection, timer or
// goroutine besides its hub's idle loop until a page is requested.
type Console struct {
	cfg    Config
	hub    *hub // nil when Login is set: each session has its own
	logins sessions
	tmpl   map[string]*template.Template
	mux    *http.ServeMux
}

// New makes a console; Close stops it.
func New(cfg Config) (*Console, error) {
	if cfg.Cluster == nil && cfg.Login == nil {
		return nil, errors.New("console: no cluster")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	c := &Console{cfg: cfg, tmpl: tmpl}
	if cfg.Login != nil {
		c.logins.byID = map[string]*session{}
	} else {
		c.hub = newHub(collector{cluster: cfg.Cluster, metrics: cfg.Metrics}, cfg.Logger, cfg.Now, cfg.Interval, cfg.Timeout)
	}
	c.routes()
	return c, nil
}

// Close stops the hub and waits for its collections; open event streams
// end.
func (c *Console) Close() {
	if c.hub != nil {
		c.hub.close()
	}
	c.closeSessions()
}

// Handler serves the console.
func (c *Console) Handler() http.Handler { return http.HandlerFunc(c.serveHTTP) }

func (c *Console) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.hostAllowed(r.Host) {
		http.Error(w, "weir console: unknown host "+r.Host+" (start weir with --console-host to allow it)", http.StatusMisdirectedRequest)
		return
	}
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; form-action 'self'")
	if c.cfg.Login != nil {
		c.withSession(w, r)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// hostAllowed accepts loopback names and addresses and the configured
// hosts.
func (c *Console) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range c.cfg.Hosts {
		if strings.EqualFold(a, hostport) || strings.EqualFold(a, host) {
			return true
		}
	}
	return false
}

func parseTemplates() (map[string]*template.Template, error) {
	pages, err := fs.Glob(assets, "templates/page_*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, p := range pages {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/page_"), ".html")
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/parts.html", p)
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}
