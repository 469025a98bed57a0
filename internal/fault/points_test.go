package fault

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// The injector delays the replies of the keys in Points by their config's
// current value, and leaves every other key alone.
func TestInjectorAppliesThePoints(t *testing.T) {
	delays := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	inj := NewInjector(func(name string) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return delays[name]
	}, nil, &wg)
	for _, p := range Points {
		in := server.Ready(kmsg.NewPtrProduceResponse())
		if inj.Apply(p.Key, in) != in {
			t.Fatalf("key %d delayed while %s is 0", p.Key, p.Config)
		}
		mu.Lock()
		delays[p.Config] = time.Hour
		mu.Unlock()
		stop := make(chan struct{})
		inj.stop = stop
		out := inj.Apply(p.Key, in)
		if out == in || server.WaitReply(out, 10*time.Millisecond) {
			t.Fatalf("key %d not delayed with %s set", p.Key, p.Config)
		}
		close(stop)
		if !server.WaitReply(out, 5*time.Second) {
			t.Fatalf("key %d: stop did not release the reply", p.Key)
		}
		inj.stop = nil
	}
	in := server.Ready(kmsg.NewPtrMetadataResponse())
	if inj.Apply(3, in) != in {
		t.Fatal("a key without a point was delayed")
	}
}
