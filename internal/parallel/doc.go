// Package parallel runs the iterations of a loop on a bounded number of
// goroutines, for loops whose iterations wait on the disk (opening or
// closing thousands of partition logs at a broker's start and stop), where
// one at a time leaves the device idle between each iteration's fsyncs.
//
// Do returns once every iteration has returned: the goroutines it starts
// are its own and never outlive it.
package parallel
