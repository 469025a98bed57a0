package clock

import (
	"fmt"
	"testing"
	"time"
)

var testStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func TestManual(t *testing.T) {
	c := NewManual(testStart)
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, fmt.Sprintf("%s@%v", name, c.Now().Sub(testStart))) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(1*time.Second, at("a"))
	stopped := c.AfterFunc(2*time.Second, at("never"))
	c.AfterFunc(1*time.Second, at("b")) // same deadline as a: creation order
	c.AfterFunc(2*time.Second, func() {
		at("d")()
		// Scheduled while firing, due within the same Advance.
		c.AfterFunc(500*time.Millisecond, at("e"))
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should succeed once")
	}
	if c.Pending() != 4 {
		t.Fatalf("pending %d", c.Pending())
	}
	c.Advance(2500 * time.Millisecond)
	if got := fmt.Sprint(fired); got != "[a@1s b@1s d@2s e@2.5s]" {
		t.Fatalf("fired %s", got)
	}
	if now := c.Now().Sub(testStart); now != 2500*time.Millisecond {
		t.Fatalf("now %v", now)
	}
	c.Advance(time.Second)
	if len(fired) != 5 || c.Pending() != 0 {
		t.Fatalf("fired %v pending %d", fired, c.Pending())
	}
}
