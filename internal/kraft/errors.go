package kraft

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// NotControllerError: this node does not run the active controller (it
// is not the raft leader, or has just become it and is not ready yet).
// errors.Is(err, kerr.NotController) holds.
type NotControllerError struct {
	// LeaderID is the raft leader as this node knows it, -1 if none.
	LeaderID int32
}

func (e *NotControllerError) Error() string {
	return fmt.Sprintf("kraft: not the active controller (leader %d)", e.LeaderID)
}

// Is matches kerr.NotController.
func (e *NotControllerError) Is(target error) bool { return target == kerr.NotController }

var (
	// ErrUnsupportedRequest is returned for an API key the controller
	// does not handle.
	ErrUnsupportedRequest = errors.New("kraft: not a controller request")
	// ErrClosed is returned by a closed node, client or lifecycle.
	ErrClosed = errors.New("kraft: closed")

	errSubscriptionClosed = errors.New("kraft: subscription closed")
)
