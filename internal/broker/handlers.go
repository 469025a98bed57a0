package broker

import (
	"context"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"weir/internal/server"
)

// handler serves one API key. Each handler file declares its own with
// the version range it serves; ApiVersions is derived from this table,
// never kept by hand.
type handler struct {
	key int16
	// min and max bound what ApiVersions advertises.
	min, max int16
	// minServed, when above min, is the lowest version actually served:
	// Kafka 4.x advertises Produce from v0 for old librdkafka feature
	// checks but closes the connection on v0-2 (KAFKA-18659).
	minServed int16
	serve     func(b *Broker, ctx context.Context, req *server.Request) *server.Reply
	// file is the source file that registered the handler: NN_name.go,
	// one per API key (TestHandlersLiveInTheirFiles).
	file string
}

var handlers = map[int16]handler{}

// register adds h to the table; it runs from package-level var
// initialisers in the handler files.
func register(h handler) struct{} {
	if _, dup := handlers[h.key]; dup {
		panic("broker: handler registered twice for key " + kmsg.NameForKey(h.key))
	}
	if kmax := kmsg.RequestForKey(h.key).MaxVersion(); h.max > kmax {
		panic("broker: handler for " + kmsg.NameForKey(h.key) + " claims a version kmsg cannot decode")
	}
	if h.minServed < h.min {
		h.minServed = h.min
	}
	if _, file, _, ok := runtime.Caller(1); ok {
		h.file = filepath.Base(file)
	}
	handlers[h.key] = h
	return struct{}{}
}

// versions lists every served key in key order.
func versions() []server.APIVersionRange {
	out := make([]server.APIVersionRange, 0, len(handlers))
	for _, h := range handlers {
		out = append(out, server.APIVersionRange{Key: h.key, Min: h.min, Max: h.max})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
