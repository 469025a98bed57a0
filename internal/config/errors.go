package config

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a Kafka-visible failure: the error code and message a handler
// puts in the response for one resource.
type Error struct {
	Code    int16
	Message string
}

func (e *Error) Error() string {
	name := "UNKNOWN"
	if k, ok := kerr.ErrorForCode(e.Code).(*kerr.Error); ok {
		name = k.Message
	}
	return "config: " + name + ": " + e.Message
}

// Is lets errors.Is match an *Error against a kerr error of the same code.
func (e *Error) Is(target error) bool {
	var k *kerr.Error
	return errors.As(target, &k) && k.Code == e.Code
}

func invalidConfig(msg string) *Error  { return &Error{Code: kerr.InvalidConfig.Code, Message: msg} }
func invalidRequest(msg string) *Error { return &Error{Code: kerr.InvalidRequest.Code, Message: msg} }
