// Package fault holds weir's fault-injection points: delays the broker
// adds to its responses when an operator or a scenario asks for them,
// through dynamic broker configs that are zero, and therefore off,
// unless set. They exist to reproduce experiments such as KIP-794's "one
// broker of three answers produce 20 ms late".
//
//   - weir.fault.produce.response.delay.ms and
//     weir.fault.fetch.response.delay.ms are the slow broker the KIP
//     measured: Kafka handles one request per connection at a time, so a
//     broker that spends 20 ms more on each produce answers a
//     connection's requests one after another, 20 ms apart. These delays
//     are serial per connection (Injector documents the rule).
//   - weir.fault.produce.response.delay.concurrent.ms and
//     weir.fault.fetch.response.delay.concurrent.ms delay each response
//     on its own: added latency without lost capacity (a producer with
//     five requests in flight still gets five answers per delay).
//
// The points are a table (Points: an API key, the config that sets its
// delay, serial or not); the broker hands every reply to an Injector,
// which owns the table, instead of switching on keys itself. Other
// faults (pausing, killing or restarting a broker, controlled shutdown,
// leadership moves, reassignments) act on processes and through admin
// APIs and belong to their drivers (internal/localcluster, scenario).
//
// # Concurrency
//
// A delayed reply completes from a goroutine the broker's wait group
// counts, never blocking the connection's reader; the server still writes
// replies in request order. The Injector's lane table (one entry per
// connection with a serial delay in use) has one mutex, a leaf held only
// to look up or swap a lane's tail; an entry goes when its connection's
// context ends. Closing the stop channel completes every waiting reply.
package fault
