//go:build !linux

package log

import "errors"

// haveSyncFS is false where syncfs(2) is missing: CloseAll closes each log
// with Close.
const haveSyncFS = false

func syncFS(string) error { return errors.ErrUnsupported }
