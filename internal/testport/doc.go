// Package testport hands tests a loopback address that is free to listen
// on and stays free of the kernel's outgoing connections.
//
// An address taken from a listener on port 0 comes from the ephemeral
// range (32768-60999 on Linux), which is also where every outgoing
// connection gets its local port: between the probe closing it and the
// test's server binding it, a connection made by another test package
// running in parallel can take it, and the bind then fails for as long as
// that connection lives. Addr draws ports from below that range instead,
// so only another test's listener could collide, and it checks that the
// port binds before handing it out.
package testport
