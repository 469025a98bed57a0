package scenario

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// profiled runs drain with the CPU profile of cfg.CPUProfile on and writes
// the allocation profile to cfg.MemProfile after it; with neither set it
// just runs drain.
func profiled(cfg Config, drain func() (drainOutcome, error)) (o drainOutcome, err error) {
	if cfg.CPUProfile != "" {
		f, ferr := os.Create(cfg.CPUProfile)
		if ferr != nil {
			return o, fmt.Errorf("scenario: cpu profile: %w", ferr)
		}
		if ferr := pprof.StartCPUProfile(f); ferr != nil {
			f.Close()
			return o, fmt.Errorf("scenario: cpu profile: %w", ferr)
		}
		defer func() {
			pprof.StopCPUProfile()
			err = errors.Join(err, f.Close())
		}()
	}
	o, err = drain()
	if cfg.MemProfile != "" {
		err = errors.Join(err, writeHeapProfile(cfg.MemProfile))
	}
	return o, err
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("scenario: allocation profile: %w", err)
	}
	runtime.GC()
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	return errors.Join(err, f.Close())
}
