package perf

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
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

// knobSettles reports whether the knob reads want within 100 ms: other
// culprit processes (the e2e tests run alongside) set it for a fraction of a
// millisecond while they start.
func knobSettles(t *testing.T, want string) bool {
	t.Helper()
	for i := 0; i < 20; i++ {
		if readKnob(t) == want {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// The first task-bound open of a process expedites RCU grace periods for its
// own duration only: the kernel knob is 1 inside the window and back to what
// it was after, and CULPRIT_RCU_NORMAL=1 leaves it alone.
func TestOpenTaskExpeditesOnce(t *testing.T) {
	testutil.NeedRoot(t)
	_, err := os.Stat(rcuExpedited)
	testutil.Need(t, err == nil, fmt.Sprintf("%s: %v", rcuExpedited, err))
	testutil.Need(t, knobSettles(t, "0"), rcuExpedited+" stays 1 on this machine: nothing to expedite")

	inside := ""
	for try := 0; try < 3 && inside != "1"; try++ {
		restore := expediteRCU()
		inside = readKnob(t)
		restore()
	}
	if inside != "1" {
		t.Errorf("inside the window the knob is %q, want 1", inside)
	}
	if !knobSettles(t, "0") {
		t.Errorf("after the window the knob is %q, want 0", readKnob(t))
	}

	t.Setenv("CULPRIT_RCU_NORMAL", "1")
	restore := expediteRCU()
	if !knobSettles(t, "0") {
		t.Errorf("with CULPRIT_RCU_NORMAL=1 the knob is %q, want 0", readKnob(t))
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
		if !knobSettles(t, "0") {
			t.Errorf("after open %d the knob is %q, want 0", i, readKnob(t))
		}
	}
}
