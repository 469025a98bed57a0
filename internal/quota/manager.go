package quota

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"weir/internal/metadata"
)

// Broker configs of client quotas, with Kafka's names and defaults.
const (
	WindowNumConfig         = "quota.window.num"
	WindowSizeSecondsConfig = "quota.window.size.seconds"

	DefaultWindowNum  = 11
	DefaultWindowSize = time.Second
)

// Config is how rates are measured.
type Config struct {
	// Samples is quota.window.num: how many windows a rate spans.
	Samples int
	// Window is quota.window.size.seconds: the length of one window.
	Window time.Duration
}

// ParseConfig reads quota.window.num and quota.window.size.seconds
// (integers of at least 1); get returns a config's value and whether it
// is set.
func ParseConfig(get func(name string) (string, bool)) (Config, error) {
	cfg := Config{Samples: DefaultWindowNum, Window: DefaultWindowSize}
	for _, c := range []struct {
		name string
		set  func(int)
	}{
		{WindowNumConfig, func(n int) { cfg.Samples = n }},
		{WindowSizeSecondsConfig, func(n int) { cfg.Window = time.Duration(n) * time.Second }},
	} {
		v, ok := get(c.name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return Config{}, fmt.Errorf("quota: %s=%s: not an integer of at least 1", c.name, v)
		}
		c.set(n)
	}
	return cfg, nil
}

// inactiveSensor is how long a client's rate is kept without a record,
// as Kafka keeps its quota sensors.
const inactiveSensor = time.Hour

// Manager keeps the rates of the clients with quotas and computes
// throttle times, as Kafka's client quota managers do. It is a pure core:
// time comes in with each call, quotas with each call's image set, and it
// starts no goroutine. It is safe for concurrent use.
type Manager struct {
	cfg windowCfg

	mu        sync.Mutex // a leaf: nothing is called with it held
	lim       *limits    // resolution of the last quota set seen
	sensors   map[sensorKey]*sensor
	lastSweep int64
}

type sensor struct {
	r    rate
	last int64 // ms of the last record
}

// NewManager returns a manager; zero config fields take Kafka's defaults.
func NewManager(cfg Config) *Manager {
	if cfg.Samples < 1 {
		cfg.Samples = DefaultWindowNum
	}
	if cfg.Window < time.Millisecond {
		cfg.Window = DefaultWindowSize
	}
	return &Manager{cfg: windowCfg{samples: cfg.Samples, window: cfg.Window.Milliseconds()}, sensors: make(map[sensorKey]*sensor)}
}

// limitsLocked returns the resolution of q, rebuilding it when q is not
// the set seen last. Image quota sets are never modified, so the pointer
// says whether the resolution is current.
func (m *Manager) limitsLocked(q *metadata.ClientQuotas) *limits {
	if m.lim == nil || m.lim.q != q {
		m.lim = newLimits(q)
	}
	return m.lim
}

func (m *Manager) sensorLocked(k sensorKey, now int64) *sensor {
	if now-m.lastSweep >= time.Minute.Milliseconds() {
		m.lastSweep = now
		for key, s := range m.sensors {
			if now-s.last >= inactiveSensor.Milliseconds() {
				delete(m.sensors, key)
			}
		}
	}
	s, ok := m.sensors[k]
	if !ok {
		s = &sensor{last: now}
		m.sensors[k] = s
	}
	return s
}

// Record records value (bytes for Produce and Fetch) for a client at now
// and returns how long the client must be throttled: 0 within its quota.
// Nothing is recorded while no client has a quota of kind k, as Kafka
// records only once quotas of a kind are in use; once they are, every
// client's value counts towards the rate it shares, with a quota or
// not.
func (m *Manager) Record(q *metadata.ClientQuotas, k Kind, c Client, value float64, now time.Time) time.Duration {
	return m.record(q, k, c, value, now, math.MaxInt64)
}

// RecordRequestTime records time the broker spent on a client's request
// towards its request_percentage quota and returns the throttle time,
// which Kafka bounds by one window. Requests exempt from request quotas
// (RequestQuotaExempt) are not recorded.
func (m *Manager) RecordRequestTime(q *metadata.ClientQuotas, c Client, spent time.Duration, now time.Time) time.Duration {
	// Kafka records request time as a percentage of one thread's second:
	// the rate per second of these values is the percentage used.
	return m.record(q, Request, c, float64(spent.Nanoseconds())*100/1e9, now, m.cfg.window)
}

func (m *Manager) record(q *metadata.ClientQuotas, k Kind, c Client, value float64, now time.Time, maxMs int64) time.Duration {
	ms := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	lim := m.limitsLocked(q)
	if !lim.enabled(k) {
		return 0
	}
	key := lim.key(k, c)
	s := m.sensorLocked(key, ms)
	s.r.record(m.cfg, value, ms)
	s.last = ms
	bound, ok := lim.limit(key)
	if !ok {
		return 0
	}
	return time.Duration(min(s.r.throttleMs(m.cfg, bound, ms), maxMs)) * time.Millisecond
}

// Unrecord takes back a value recorded at now: a fetch that is throttled
// is answered without its records, and the bytes it would have sent do
// not count.
func (m *Manager) Unrecord(q *metadata.ClientQuotas, k Kind, c Client, value float64, now time.Time) {
	ms := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	lim := m.limitsLocked(q)
	if !lim.enabled(k) {
		return
	}
	s := m.sensorLocked(lim.key(k, c), ms)
	s.r.record(m.cfg, -value, ms)
}

// Limit is a client's quota of kind k and whether it has one.
func (m *Manager) Limit(q *metadata.ClientQuotas, k Kind, c Client) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	lim := m.limitsLocked(q)
	return lim.limit(lim.key(k, c))
}

// MaxFetchBytes is the most a fetch may return to a client without
// being throttled, had nothing been recorded in the quota window: its
// consumer_byte_rate over samples-1 windows, as Kafka caps a consumer's
// fetch.max.bytes. math.MaxInt32 without a quota.
func (m *Manager) MaxFetchBytes(q *metadata.ClientQuotas, c Client) int32 {
	bound, ok := m.Limit(q, Fetch, c)
	if !ok {
		return math.MaxInt32
	}
	v := bound * float64(m.cfg.samples-1) * float64(m.cfg.window) / 1000
	if v >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(v)
}

// RequestQuotaExempt reports whether a request is exempt from
// request_percentage quotas, as Kafka exempts its cluster actions:
// requests between brokers and controllers (AlterPartition, broker
// registration and heartbeats, producer id blocks, share-group state,
// transaction markers) and followers' fetches.
func RequestQuotaExempt(key int16, followerFetch bool) bool {
	switch key {
	case 1:
		return followerFetch
	case 27, 56, 62, 63, 67, 83, 84, 85, 86, 87:
		return true
	}
	return false
}
