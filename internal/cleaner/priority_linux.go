package cleaner

import (
	"errors"
	"fmt"
	"syscall"
)

// Linux's ioprio_set(2) values: the best-effort class at its lowest
// level, for one thread.
const (
	ioprioWhoProcess = 1
	ioprioClassBE    = 2
	ioprioClassShift = 13
	ioprioLowestBE   = ioprioClassBE<<ioprioClassShift | 7
)

// lowerThreadPriority gives the calling OS thread the CPU priority nice
// (setpriority(2) on its thread id: Linux keeps a nice value per thread)
// and the lowest best-effort I/O priority. The caller has locked its
// goroutine to the thread. restore puts back the thread's priorities as
// they were; where it fails (raising a nice value takes CAP_SYS_NICE) the
// caller must leave the thread locked, so that it ends with the goroutine
// rather than going back to the runtime at a low priority. On an error
// the thread's priorities are as they were.
func lowerThreadPriority(nice int) (restore func() error, err error) {
	tid := syscall.Gettid()
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return nil, fmt.Errorf("getpriority: %w", err)
	}
	was := 20 - prio // the system call's answer, not nice itself
	io, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
	if errno != 0 {
		return nil, fmt.Errorf("ioprio_get: %w", errno)
	}
	restore = func() error {
		err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, was)
		if _, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), io); errno != 0 {
			err = errors.Join(err, errno)
		}
		return err
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
		return nil, fmt.Errorf("setpriority(%d): %w", nice, err)
	}
	if _, _, errno := syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), ioprioLowestBE); errno != 0 {
		return nil, errors.Join(fmt.Errorf("ioprio_set: %w", errno), restore())
	}
	return restore, nil
}
