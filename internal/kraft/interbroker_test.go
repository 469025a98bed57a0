package kraft

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInterBrokerClient: each request goes to the broker it names, over
// a connection kept per broker; a broker that cannot be resolved fails
// within the timeout; after Close requests fail at once.
func TestInterBrokerClient(t *testing.T) {
	fetchKeys := []APIKeyRange{{Key: 1, Min: 4, Max: 17}}
	answer := func(req kmsg.Request) kmsg.Response { return req.ResponseKind() }
	one, two := &scripted{keys: fetchKeys, answer: answer}, &scripted{keys: fetchKeys, answer: answer}
	a, b := serve(t, one, "127.0.0.1:0"), serve(t, two, "127.0.0.1:0")
	defer a.stop()
	defer b.stop()
	addrs := map[int32]string{1: a.srv.Addr().String(), 2: b.srv.Addr().String()}
	c := NewInterBrokerClient(InterBrokerConfig{
		Resolve: func(id int32) (string, bool) { addr, ok := addrs[id]; return addr, ok },
		Timeout: 300 * time.Millisecond,
	})
	defer c.Close()

	for _, id := range []int32{1, 2, 1, 1, 2} {
		if _, err := c.Send(ctxTimeout(t, 5*time.Second), id, kmsg.NewPtrFetchRequest()); err != nil {
			t.Fatalf("send to %d: %v", id, err)
		}
	}
	if n1, n2 := len(one.requests()), len(two.requests()); n1 != 3 || n2 != 2 {
		t.Fatalf("brokers saw %d and %d fetches, want 3 and 2", n1, n2)
	}
	if d := c.Dials(); d != 2 {
		t.Fatalf("%d connections opened, want one per broker", d)
	}

	start := time.Now()
	if _, err := c.Send(ctxTimeout(t, 5*time.Second), 3, kmsg.NewPtrFetchRequest()); err == nil {
		t.Fatal("a broker without an address answered")
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("an unresolvable broker took %v, beyond the request timeout", el)
	}

	c.Close()
	if _, err := c.Send(ctxTimeout(t, 5*time.Second), 1, kmsg.NewPtrFetchRequest()); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after Close: %v, want ErrClosed", err)
	}
}
