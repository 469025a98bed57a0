// Package errcode turns internal errors into what a Kafka response
// carries: the error code a wrapped kerr value names and the detail the
// error adds to it. Handlers choose codes by wrapping kerr errors
// (fmt.Errorf("%w: ...", kerr.X)); the code and the message are then
// read here, in one way for every package that builds responses.
package errcode

import (
	"errors"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Of is the Kafka error code err carries: 0 for nil, the code of the
// kerr error it wraps, else UNKNOWN_SERVER_ERROR.
func Of(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// Message is the detail err adds to its Kafka code, for the ErrorMessage
// fields: nil for nil and for a bare kerr error (Kafka sends null then),
// else the text without the code's own name in front.
func Message(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if s == ke.Error() {
			return nil
		}
		s = strings.TrimPrefix(s, ke.Error()+": ")
	}
	return &s
}
