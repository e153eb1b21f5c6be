package e2e

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// --events records a kernel + user stack at every system call entry and
// exit and at every context switch, with the syscall number or the leaving
// thread's state; --event-period keeps one in N.
func TestSyscallAndSwitchEvents(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g")
	const writes = 5000
	// At period 1 a tight write(2) loop outruns any ring (perf record too):
	// what is not recorded must be counted as lost.
	count := func(period string) (map[recording.Event]int, *profile.Profile) {
		out := rec(t)
		mustRun(t, "record", "--events", "cpu,syscalls,sched", "--event-period", period, "-o", out, "--", bin, "5000")
		p, err := loader.Load([]string{out}, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := map[recording.Event]int{}
		n[255] = int(p.Lost)
		for _, s := range p.Samples {
			n[s.Event]++
		}
		return n, p
	}
	n, p := count("1")
	if n[recording.EventSyscallEnter]+n[recording.EventSyscallExit]+n[255] < 2*writes {
		t.Errorf("syscall events %v (255: lost), want at least %d entries and exits recorded or counted lost", n, writes)
	}
	writeCalls, withCaller := 0, 0
	for _, s := range p.Samples {
		if s.Event != recording.EventSyscallEnter || s.Arg != 1 { // 1: write on x86-64
			continue
		}
		writeCalls++
		for _, fi := range p.Stacks[s.Stack] {
			if p.Frames[fi].Function == "write_many" {
				withCaller++
				break
			}
		}
	}
	if writeCalls < writes/10 || withCaller < writeCalls*95/100 {
		t.Errorf("%d write(2) entries, %d with write_many on the stack; want ≥95%%", writeCalls, withCaller)
	}
	if n[recording.EventSwitch] == 0 {
		t.Errorf("no context-switch events: %v", n)
	}
	n10, _ := count("10")
	if n10[255] != 0 {
		t.Errorf("--event-period 10 lost %d samples", n10[255])
	}
	got := n10[recording.EventSyscallEnter]
	if got < writes/10-50 || got > writes/10+50 {
		t.Errorf("--event-period 10: %d syscall entries, want about %d", got, writes/10)
	}
}
