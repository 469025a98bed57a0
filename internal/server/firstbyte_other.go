//go:build !unix

package server

import "net"

// awaitFirstByte reports true at once here: the handshake's clock starts
// when the connection is accepted.
func awaitFirstByte(net.Conn) bool { return true }
