package fault

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

func TestDelayHoldsTheReply(t *testing.T) {
	in := server.Ready(kmsg.NewPtrProduceResponse())
	start := time.Now()
	var wg sync.WaitGroup
	out := Delay(in, 50*time.Millisecond, nil, &wg)
	defer wg.Wait()
	if server.WaitReply(out, 10*time.Millisecond) {
		t.Fatal("delayed reply completed early")
	}
	if !server.WaitReply(out, 5*time.Second) {
		t.Fatal("delayed reply never completed")
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("completed after %v, want at least 50ms", took)
	}
}

func TestDelayZeroIsIdentity(t *testing.T) {
	in := server.NoResponse()
	if Delay(in, 0, nil, nil) != in {
		t.Fatal("a zero delay must not wrap the reply")
	}
}

func TestDelayStopsEarly(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	out := Delay(server.Ready(kmsg.NewPtrFetchResponse()), time.Hour, stop, &wg)
	close(stop)
	if !server.WaitReply(out, 5*time.Second) {
		t.Fatal("stop did not release the delayed reply")
	}
	wg.Wait()
}
