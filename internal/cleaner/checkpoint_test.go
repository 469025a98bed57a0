package cleaner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"
)

func TestParseCheckpoint(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[TopicPartition]int64
		bad  bool
	}{
		{"empty", "0\n0\n", map[TopicPartition]int64{}, false},
		{"entries", "0\n2\n__consumer_offsets 7 1234\nt 0 5\n", map[TopicPartition]int64{{"__consumer_offsets", 7}: 1234, {"t", 0}: 5}, false},
		{"no final newline", "0\n1\nt 0 5", map[TopicPartition]int64{{"t", 0}: 5}, false},
		{"version 1", "1\n0\n", nil, true},
		{"count too high", "0\n2\nt 0 5\n", nil, true},
		{"count too low", "0\n0\nt 0 5\n", nil, true},
		{"negative offset", "0\n1\nt 0 -5\n", nil, true},
		{"partition not a number", "0\n1\nt x 5\n", nil, true},
		{"partition too large", "0\n1\nt 4294967296 5\n", nil, true},
		{"missing field", "0\n1\nt 0\n", nil, true},
		{"nothing", "", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCheckpoint([]byte(tc.in))
			if tc.bad {
				if !errors.Is(err, errCheckpoint) {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Fatalf("got %v %v, want %v", got, err, tc.want)
			}
		})
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\n__consumer_offsets 7 1234\nt 0 5\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n1\nt 0 -5\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCheckpoint(b)
		if err != nil {
			return
		}
		// What parses encodes and parses back to the same entries.
		again, err := parseCheckpoint(encodeCheckpoint(m))
		if err != nil || !maps.Equal(m, again) {
			t.Fatalf("round trip of %v: %v %v", m, again, err)
		}
	})
}

func TestThrottleKeepsTheRate(t *testing.T) {
	clock := newClock()
	var slept []time.Duration
	th := newThrottle(1000, clock.now, func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		clock.add(d)
		return nil
	})
	// 3000 bytes in the first 300 ms window: at 1000 B/s that window
	// should have lasted 3 s.
	clock.add(100 * time.Millisecond)
	th.wait(context.Background(), 1000)
	clock.add(200 * time.Millisecond)
	th.wait(context.Background(), 2000)
	if fmt.Sprint(slept) != "[2.7s]" {
		t.Fatalf("slept %v", slept)
	}
	// Under the rate: no sleep.
	clock.add(time.Second)
	th.wait(context.Background(), 100)
	if len(slept) != 1 {
		t.Fatalf("slept %v under the rate", slept)
	}
	// Unlimited by default.
	un := newThrottle(DefaultConfig().IOMaxBytesPerSecond, clock.now, func(context.Context, time.Duration) error {
		t.Fatal("an unlimited throttle slept")
		return nil
	})
	clock.add(time.Second)
	un.wait(context.Background(), 1<<30)
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		mut  func(*Config)
		ok   bool
	}{
		{"defaults", func(*Config) {}, true},
		{"no threads", func(c *Config) { c.Threads = 0 }, true},
		{"negative threads", func(c *Config) { c.Threads = -1 }, false},
		{"buffer too small for the threads", func(c *Config) { c.Threads = 4; c.DedupeBufferSize = 100 }, false},
		{"load factor 0", func(c *Config) { c.LoadFactor = 0 }, false},
		{"load factor above 1", func(c *Config) { c.LoadFactor = 1.5 }, false},
		{"negative backoff", func(c *Config) { c.Backoff = -1 }, false},
		{"nice 0", func(c *Config) { c.Nice = 0 }, true},
		{"nice 19", func(c *Config) { c.Nice = MaxNice }, true},
		{"negative nice", func(c *Config) { c.Nice = -1 }, false},
		{"nice past 19", func(c *Config) { c.Nice = 20 }, false},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.mut(&c)
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
