// Package fault holds weir's fault-injection points: delays the broker
// adds to its responses when an operator or a scenario asks for them
// (weir.fault.produce.response.delay.ms and
// weir.fault.fetch.response.delay.ms, dynamic broker configs, zero and
// therefore off unless set). They exist to reproduce experiments such as
// KIP-794's "one broker of three answers produce 20 ms late".
//
// The points are a table (Points: an API key and the config that sets its
// delay); the broker hands every reply to an Injector, which owns the
// table, instead of switching on keys itself.
//
// A Delay holds a reply back without blocking the connection's reader:
// the reply completes from a timer, and the server still writes replies in
// request order.
package fault
