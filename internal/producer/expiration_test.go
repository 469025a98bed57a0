package producer

import (
	"sync"
	"testing"
	"time"

	"weir/internal/clock"
)

// countingExpirer counts the rounds that reached it.
type countingExpirer struct {
	mu     sync.Mutex
	rounds int
}

func (c *countingExpirer) ExpireProducers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rounds++
	return 1
}

func (c *countingExpirer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds
}

// Every partition held at a round has its idle producers expired once per
// interval, a partition added later from the next round on, and none
// after Close.
func TestExpiration(t *testing.T) {
	clk := clock.NewManual(time.Unix(0, 0))
	a, b := &countingExpirer{}, &countingExpirer{}
	var mu sync.Mutex
	held := []Expirer{a}
	e := StartExpiration(ExpirationConfig{Every: time.Minute, Clock: clk, Partitions: func() []Expirer {
		mu.Lock()
		defer mu.Unlock()
		return append([]Expirer(nil), held...)
	}})
	for _, step := range []struct {
		advance time.Duration
		add     Expirer
		a, b    int
	}{
		{advance: time.Minute - time.Millisecond, a: 0},
		{advance: time.Millisecond, a: 1},
		{advance: 30 * time.Second, add: b, a: 1},
		{advance: 30 * time.Second, a: 2, b: 1},
		{advance: 3 * time.Minute, a: 5, b: 4},
	} {
		if step.add != nil {
			mu.Lock()
			held = append(held, step.add)
			mu.Unlock()
		}
		clk.Advance(step.advance)
		if a.count() != step.a || b.count() != step.b {
			t.Fatalf("after %v more: rounds %d and %d, want %d and %d", step.advance, a.count(), b.count(), step.a, step.b)
		}
	}
	e.Close()
	clk.Advance(time.Hour)
	if a.count() != 5 || clk.Pending() != 0 {
		t.Fatalf("after Close: %d rounds, %d timers pending", a.count(), clk.Pending())
	}
}
