// Package clock is the injectable time of weir's services: Clock (Now and
// AfterFunc), the wall clock, and Manual, a clock that moves only when a
// test advances it and fires due timers in deadline order on the
// advancing goroutine. Manual is safe for concurrent use; its timers run
// without its lock held.
package clock
