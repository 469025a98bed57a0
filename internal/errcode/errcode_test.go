package errcode

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestOfAndMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int16
		msg  string // "" means nil
	}{
		{"nil", nil, 0, ""},
		{"bare kerr", kerr.NotCoordinator, kerr.NotCoordinator.Code, ""},
		{"wrapped kerr", fmt.Errorf("%w: group g moved", kerr.NotCoordinator), kerr.NotCoordinator.Code, "group g moved"},
		{"twice wrapped", fmt.Errorf("load: %w", fmt.Errorf("%w: x", kerr.FencedLeaderEpoch)), kerr.FencedLeaderEpoch.Code, "load: " + kerr.FencedLeaderEpoch.Error() + ": x"},
		{"plain error", errors.New("disk on fire"), kerr.UnknownServerError.Code, "disk on fire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Of(tc.err); got != tc.code {
				t.Fatalf("Of = %d, want %d", got, tc.code)
			}
			got := Message(tc.err)
			if (got == nil) != (tc.msg == "") || (got != nil && *got != tc.msg) {
				t.Fatalf("Message = %v, want %q", got, tc.msg)
			}
		})
	}
}
