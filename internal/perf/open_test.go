package perf

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

func readKnob(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(rcuExpedited)
	if err != nil {
		t.Fatalf("reading %s: %v", rcuExpedited, err)
	}
	return strings.TrimSpace(string(b))
}

// The first task-bound open of a process expedites RCU grace periods for its
// own duration only: the kernel knob is 1 inside the window and back to what
// it was after, and CULPRIT_RCU_NORMAL=1 leaves it alone.
func TestOpenTaskExpeditesOnce(t *testing.T) {
	testutil.NeedRoot(t)
	_, err := os.Stat(rcuExpedited)
	testutil.Need(t, err == nil, fmt.Sprintf("%s: %v", rcuExpedited, err))
	before := readKnob(t)
	testutil.Need(t, before == "0", rcuExpedited+" is "+before+" on this machine: nothing to expedite")

	restore := expediteRCU()
	if got := readKnob(t); got != "1" {
		t.Errorf("inside the window the knob is %q, want 1", got)
	}
	restore()
	if got := readKnob(t); got != before {
		t.Errorf("after the window the knob is %q, want %q", got, before)
	}

	t.Setenv("CULPRIT_RCU_NORMAL", "1")
	restore = expediteRCU()
	if got := readKnob(t); got != before {
		t.Errorf("with CULPRIT_RCU_NORMAL=1 the knob is %q, want %q", got, before)
	}
	restore()
	t.Setenv("CULPRIT_RCU_NORMAL", "")

	expediteOnce = sync.Once{}
	a := &unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled,
	}
	for i := 0; i < 2; i++ {
		fd, err := OpenTask(a, unix.Getpid(), -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		unix.Close(fd)
		if got := readKnob(t); got != before {
			t.Errorf("after open %d the knob is %q, want %q", i, got, before)
		}
	}
}
