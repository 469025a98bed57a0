//go:build !linux

package cleaner

func lowerThreadPriority(int) (func() error, error) { return nil, errNoPriority }
