package localcluster

import (
	"io/fs"
	"os"
	"testing"
)

func TestStatAlive(t *testing.T) {
	tests := []struct {
		name string
		stat string
		err  error
		proc bool
		want bool
	}{
		{"running", "5533 (weir) S 1 5533 5533 0", nil, true, true},
		{"zombie", "5533 (weir) Z 1 5533 5533 0", nil, true, false},
		{"parenthesis in the name", "5533 (we) R) R 1 5533", nil, true, true},
		{"zombie with a parenthesis in the name", "5533 (we) R) Z 1 5533", nil, true, false},
		{"reaped after kill(0) found it", "", fs.ErrNotExist, true, false},
		{"reaped, wrapped error", "", &fs.PathError{Op: "open", Path: "/proc/5533/stat", Err: fs.ErrNotExist}, true, false},
		{"no /proc at all", "", fs.ErrNotExist, false, true},
		{"stat unreadable", "", fs.ErrPermission, true, true},
		{"stat cut short", "5533 (weir)", nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := statAlive([]byte(tt.stat), tt.err, tt.proc); got != tt.want {
				t.Errorf("statAlive(%q, %v, proc=%v) = %v, want %v", tt.stat, tt.err, tt.proc, got, tt.want)
			}
		})
	}
}

func TestAliveOfThisProcessAndOfNone(t *testing.T) {
	if !alive(os.Getpid()) {
		t.Error("alive(own pid) = false")
	}
	// Pids above the kernel's limit never exist.
	if alive(1 << 30) {
		t.Error("alive(1<<30) = true")
	}
}
