// Package splice builds the bodies of Fetch and ShareFetch responses
// whose records go from segment files to the socket without passing
// through user space.
//
// kmsg encodes the response with a unique 16-byte Marker in place of each
// partition's records (so kmsg keeps doing every version's field layout),
// then Body cuts the encoding at each marker and puts there the records'
// real length prefix and their Pieces: file ranges the server sends with
// sendfile, or bytes held in memory (a trimmed batch, null storage's
// repeated batch).
//
// It owns nothing beyond one response: a Part is built by one request's
// goroutine and handed to the server with the Body.
package splice
