//go:build !linux

package log

import (
	"errors"
	"os"
)

// reserveBlocks is a no-op error where fallocate(2) is not available:
// appends then allocate blocks as they write.
func reserveBlocks(*os.File, int64, int64) error { return errors.ErrUnsupported }
