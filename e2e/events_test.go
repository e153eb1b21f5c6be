package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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
	// At period 1 a tight write(2) loop makes more system calls a second
	// than a thread records (--syscall-limit): what is not recorded must be
	// counted, in the period of the thread's next recorded call or in the
	// recorder's total, or as lost.
	var said string // the recorder's message at period 1
	count := func(period string) (map[recording.Event]int, *profile.Profile) {
		out := rec(t)
		// All along (not the default auto windows): the limit's count
		// is what is checked here; windows have tests of their own.
		args := []string{"record", "--events", "cpu,syscalls,sched", "--event-period", period, "--syscall-windows", "off", "-o", out, "--", bin, "5000"}
		var code int
		if _, said, code = run(t, args...); code != 0 {
			t.Fatalf("culprit %v: exit %d\n%s", args, code, said)
		}
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
	// Each recorded call's entry and exit stand for Period calls: the call
	// and those its thread made since its previous recorded one.
	var stood [3]uint64      // by event: all entries, all exits; [0]: write entries
	var last *profile.Sample // the last recorded entry
	for i := range p.Samples {
		s := &p.Samples[i]
		switch {
		case s.Event == recording.EventSyscallEnter && s.Arg == 1:
			stood[0] += s.Period
			fallthrough
		case s.Event == recording.EventSyscallEnter:
			stood[1] += s.Period
			if last == nil || s.Time > last.Time {
				last = s
			}
		case s.Event == recording.EventSyscallExit:
			stood[2] += s.Period
		}
	}
	// The writes left out after the last recorded one are counted by the
	// next recorded entry: the program's exit_group, when it is recorded.
	if last != nil && last.Arg != 1 {
		stood[0] += last.Period
	}
	m := regexp.MustCompile(`(\d+) of (\d+) system calls recorded`).FindStringSubmatch(said)
	if m == nil {
		t.Fatalf("the recorder does not say how many system calls it recorded:\n%s", said)
	}
	recorded, _ := strconv.ParseUint(m[1], 10, 64)
	made, _ := strconv.ParseUint(m[2], 10, 64)
	// The calls after a thread's last recorded one are in the total only.
	// A call left out is counted by the thread's next recorded entry,
	// whatever its number: in this loop nearly always a write, as are
	// nearly all the calls after the last recorded one.
	tail := made - stood[1]
	if recorded != uint64(n[recording.EventSyscallEnter]) || made < stood[1] || stood[1]+tail < writes || stood[0]+tail < writes*95/100 ||
		stood[2] > stood[1] || recorded >= made {
		t.Errorf("%d of %d system calls recorded; %d entries standing for %d calls (%d of them writes), exits for %d; "+
			"want the entries recorded, at least the loop's %d writes counted (95%% by writes or after the last) and fewer recorded", recorded, made,
			n[recording.EventSyscallEnter], stood[1], stood[0], stood[2], writes)
	}
	t.Logf("%d of %d system calls recorded; the write entries stand for %d calls, %d calls after the last recorded ones", recorded, made, stood[0], tail)
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
	if writeCalls < 100 || withCaller < writeCalls*95/100 {
		t.Errorf("%d write(2) entries, %d with write_many on the stack; want ≥95%%", writeCalls, withCaller)
	}
	if n[recording.EventSwitch] == 0 {
		t.Errorf("no context-switch events: %v", n)
	}
	// System call events carry the kernel's frames too by default, and so
	// do switches (the blocking path).
	kernelAt := map[recording.Event]int{}
	for _, s := range p.Samples {
		for _, fi := range p.Stacks[s.Stack] {
			if p.Frames[fi].Kernel {
				kernelAt[s.Event]++
				break
			}
		}
	}
	if kernelAt[recording.EventSyscallEnter] == 0 || kernelAt[recording.EventSwitch] == 0 {
		t.Errorf("events with kernel frames: %v, want system calls and switches", kernelAt)
	}
	// --syscall-user-stacks: the user frames, write_many's caller repaired
	// as before, and no kernel frame.
	out := rec(t)
	mustRun(t, "record", "--events", "syscalls", "--syscall-user-stacks", "-o", out, "--", bin, "2000")
	pu, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	enters, kernel, caller := 0, 0, 0
	for _, s := range pu.Samples {
		if s.Event != recording.EventSyscallEnter || s.Arg != 1 {
			continue
		}
		enters++
		for _, fi := range pu.Stacks[s.Stack] {
			switch f := pu.Frames[fi]; {
			case f.Kernel:
				kernel++
			case f.Function == "write_many":
				caller++
			}
		}
	}
	if enters < 1000 || kernel != 0 || caller < enters*95/100 {
		t.Errorf("--syscall-user-stacks: %d write(2) entries, %d kernel frames, %d with write_many", enters, kernel, caller)
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

// culprit's BPF program (the default) records the same system call samples
// as perf's tracepoint events (--perf-events): every write(2) of a loop as an entry and an exit with the same
// stacks (kernel frames from the tracing hook, user frames repaired through
// libc's wrapper to write_many), and nothing lost (the BPF ring holds the
// whole run's records even if the recorder never drained it); context
// switches start at the scheduler function perf's do. Another tool tracing
// the same tracepoints (another culprit's BPF program) runs meanwhile: it
// makes the kernel call the probes through __traceiter_<tracepoint>, which
// must not change the stacks.
func TestBPFSyscallEvents(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g")
	const writes = 5000
	stacks := func(args ...string) (map[string]int, *profile.Profile) {
		out := rec(t)
		mustRun(t, append(append([]string{"record", "--events", "cpu,syscalls,sched"}, args...), "-o", out, "--", bin, "5000")...)
		p, err := loader.Load([]string{out}, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, s := range p.Samples {
			if s.Event == recording.EventSwitch {
				st := p.Stacks[s.Stack]
				if len(st) > 0 {
					n["switch at "+p.Frames[st[0]].Function]++
				}
				// A switch inside a write of the loop (or on its way back)
				// has the call's user chain.
				var fs []string
				for _, fi := range st {
					fs = append(fs, p.Frames[fi].Function)
				}
				if f := strings.Join(fs, " "); strings.Contains(f, "write") && strings.Contains(f, "entry_SYSCALL_64") &&
					!strings.Contains(f, "write_many main") {
					n["switch in a write without write_many and main: "+f]++
				}
				continue
			}
			if (s.Event != recording.EventSyscallEnter && s.Event != recording.EventSyscallExit) || s.Arg != 1 {
				continue
			}
			key := fmt.Sprint(s.Event)
			for _, fi := range p.Stacks[s.Stack] {
				key += " " + p.Frames[fi].Function
				if p.Frames[fi].Function == "main" {
					break
				}
			}
			n[key]++
		}
		return n, p
	}
	stop := otherTracer(t)
	viaPerf, _ := stacks("--perf-events")
	viaBPF, p := stacks("--syscall-limit", "0") // every call, as perf
	stop()
	if p.Lost != 0 {
		t.Errorf("%d records lost through the BPF program", p.Lost)
	}
	// Each entry and exit of the loop's writes, one stack for each (the
	// run's other writes, of the C library at exit, have other stacks).
	want := 0
	for k, c := range viaBPF {
		if c >= writes {
			want++
			if !strings.Contains(k, "write_many") || viaPerf[k] == 0 {
				t.Errorf("%d samples %q through the BPF program, %d through perf", c, k, viaPerf[k])
			}
		}
	}
	// The loop never blocks: its switches are preemptions, and perf's
	// events may see none (they are closed before the exiting thread's
	// last switch, which the program records).
	perfSwitches := 0
	for k, c := range viaPerf {
		if strings.HasPrefix(k, "switch at ") {
			perfSwitches += c
		}
	}
	switches := 0
	for k, c := range viaBPF {
		if strings.HasPrefix(k, "switch in a write without") {
			t.Errorf("%d switches through the BPF program: %s", c, k)
		}
		if strings.HasPrefix(k, "switch at ") {
			switches += c
			if perfSwitches > 0 && viaPerf[k] == 0 {
				t.Errorf("%d switches %q through the BPF program, none through perf (%v)\nBPF: %v", c, k, viaPerf, viaBPF)
			}
		}
	}
	if switches == 0 {
		t.Errorf("no context switch through the BPF program: %v", viaBPF)
	}
	if want != 2 {
		t.Errorf("want one stack for the loop's entries and one for its exits, each %d times, through the BPF program: %v\nthrough perf: %v", writes, viaBPF, viaPerf)
	}
}

// A thread that blocks inside read(2) leaves the CPU with the user chain of
// that call: the BPF program does not walk it again but the recorder takes
// the call's entry's, which reaches the thread's loop and entry, for every
// switch inside a read or write of the two threads handing a byte back and
// forth.
func TestSwitchInsideSystemCall(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "pingpong", []string{"pingpong.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread")
	out := rec(t)
	mustRun(t, "record", "--events", "cpu,syscalls,sched", "-o", out, "--", bin, "2000")
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inside, complete := 0, 0
	var bad []string
	for _, s := range p.Samples {
		if s.Event != recording.EventSwitch {
			continue
		}
		var fs []string
		io := false // the C library's read or write is on the stack
		for _, fi := range p.Stacks[s.Stack] {
			fn := p.Frames[fi].Function
			fs = append(fs, fn)
			io = io || fn == "read" || fn == "write" || strings.HasSuffix(fn, "libc_read") || strings.HasSuffix(fn, "libc_write")
		}
		f := strings.Join(fs, " ")
		if !io || !strings.Contains(f, "entry_SYSCALL_64") {
			continue
		}
		inside++
		if strings.Contains(f, "ping_loop main") || strings.Contains(f, "pong_loop pong start_thread") {
			complete++
		} else if len(bad) < 5 {
			bad = append(bad, f)
		}
	}
	// The first reader waits for the first byte at least.
	if inside == 0 || complete != inside {
		t.Errorf("%d switches inside a read or write, %d with the loop's chain; others: %s", inside, complete, strings.Join(bad, "; "))
	}
	t.Logf("%d switches inside a read or write", inside)
}

// TestSwitchesInWindows: with system calls recorded in windows
// (--syscall-windows), context switches are recorded in the windows only,
// each standing for PERIOD/ON switches (its period), and the recorder says
// so. Two threads handing a byte back and forth on one CPU switch twice a
// round (one blocks in read(2), the other, woken, gives way in write(2)
// or blocks too): the periods of the switches recorded in the windows
// (half the run) estimate the program's own count within a half.
func TestSwitchesInWindows(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "pingpong", []string{"pingpong.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread")
	out := rec(t)
	const rounds = 100000
	_, errs, code := run(t, "record", "--events", "cpu,syscalls,sched", "--syscall-windows", "20ms/40ms", "-o", out, "--",
		"taskset", "-c", "0", bin, strconv.Itoa(rounds))
	if code != 0 || !strings.Contains(errs, "context switches too are recorded in the windows only") {
		t.Fatalf("culprit record: exit %d, stderr:\n%s", code, errs)
	}
	var spans []recording.SyscallWindow
	var switches []recording.Sample // all the program's: the recording's only process
	eachRecord(t, out, func(r recording.Record) {
		switch r := r.(type) {
		case *recording.SyscallWindow:
			spans = append(spans, *r)
		case *recording.Sample:
			if r.Event == recording.EventSwitch {
				switches = append(switches, *r)
			}
		}
	})
	outside, odd := 0, 0
	var weight uint64
	for _, s := range switches {
		// A switch that found the window open may be stamped just
		// after its end was taken (less than a system call's return).
		i := sort.Search(len(spans), func(i int) bool { return spans[i].End+uint64(time.Millisecond) >= s.Time })
		if i == len(spans) || spans[i].Start > s.Time {
			outside++
		}
		if s.Period != 2 {
			odd++
		}
		weight += s.Period
	}
	const own = 2 * rounds
	if len(spans) < 5 || outside > 0 || odd > 0 || weight < own/2 || weight > own*3/2 {
		t.Errorf("%d windows; of %d switches of the program, %d outside a window, %d with a period other than 2; they stand for %d, want the program's %d within a half",
			len(spans), len(switches), outside, odd, weight, own)
	}
	t.Logf("%d windows; %d switches recorded stand for %d of the program's %d", len(spans), len(switches), weight, own)
}

// otherTracer runs another culprit recording system calls and context
// switches through its BPF program (attached to raw_syscalls and
// sched_switch for the whole machine, filtered by process), as another tool
// tracing the machine would, until the returned function is called.
func otherTracer(t *testing.T) (stop func()) {
	t.Helper()
	dir := t.TempDir()
	ready := filepath.Join(dir, "pid")
	// The program is attached before the command starts.
	cmd := exec.Command(culprit, "record", "--events", "cpu,syscalls,sched", "-o", filepath.Join(dir, "other.rec"),
		"--", "sh", "-c", "echo $$ >"+ready+".tmp && mv "+ready+".tmp "+ready+" && exec sleep 600")
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	waitFor(t, "another culprit to start its command", func() bool {
		b, err := os.ReadFile(ready)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return func() {
		unix.Kill(pid, unix.SIGKILL)
		if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != 128+int(unix.SIGKILL) {
			t.Errorf("the other culprit: %v\n%s", err, errb.String())
		}
	}
}

// System calls and switches of a program without frame pointers whose
// frames between its system calls and main are larger than the 1 KiB an
// event copies at first (sysframes.c: 3 to 7 KiB): the frame-pointer
// chain leads nowhere (rbp holds data), so only the copy's CFI unwind
// finds the callers, and a thread's events copy up to its top once one of
// them lost callers for want of copy (the recorder's eventTop). From the
// run's second second on (the events recorded before the recorder's first
// drain, later on a busy machine, copy 1 KiB), at least 99% of the
// entries, exits and switches in the program's functions reach main;
// nothing is lost. The run lasts 5 s: the automatic windows record a
// tenth of it call by call, and an idle machine records about 40 switches
// in the program's functions a second of windows' worth, so 4 s give
// the 100 asked for with room.
func TestEventStacksWithoutFramePointers(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "sysframes", []string{"sysframes.c"}, "-O2", "-g", "-fomit-frame-pointer")
	out := rec(t)
	_, stderr, code := run(t, "record", "--events", "cpu,syscalls,sched", "-o", out, "--", bin, "5")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Lost != 0 {
		t.Errorf("%d samples lost", p.Lost)
	}
	first := uint64(math.MaxUint64)
	for _, s := range p.Samples {
		first = min(first, s.Time)
	}
	type count struct{ in, main int }
	by := map[recording.Event]*count{recording.EventSyscallEnter: {}, recording.EventSyscallExit: {}, recording.EventSwitch: {}}
	for _, s := range p.Samples {
		c := by[s.Event]
		if c == nil || s.Time < first+uint64(time.Second) {
			continue
		}
		in, main := false, false
		for _, fi := range p.Stacks[s.Stack] {
			switch p.Frames[fi].Function {
			case "copy_block", "pause_briefly":
				in = true
			case "main":
				main = true
			}
		}
		if in {
			c.in++
			if main {
				c.main++
			}
		}
	}
	for ev, c := range by {
		if c.in < 100 || c.main < c.in*99/100 {
			t.Errorf("%v: %d of %d samples in the program's functions reach main, want ≥ 99%% of 100 or more", ev, c.main, c.in)
		}
		t.Logf("%v: %d of %d samples reach main", ev, c.main, c.in)
	}
}

// Short-lived processes of programs without frame pointers (Debian's sh
// forking true, each start-up in the dynamic loader) lose callers at most
// of their system calls: their threads never make the calls after which
// their copies would reach their tops. The warning says which copies were
// too small, the events' 1 KiB ones, not the CPU samples' 8 KiB.
func TestEventCopiesInWarning(t *testing.T) {
	testutil.NeedRoot(t)
	out := rec(t)
	_, stderr, code := run(t, "record", "--events", "cpu,syscalls,sched", "-o", out, "--",
		"sh", "-c", "i=0; while [ $i -lt 30 ]; do true; /bin/true; i=$((i+1)); done")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "samples lost callers") || !strings.Contains(stderr, "system call, switch or tick samples, whose copies hold 1024 bytes") {
		t.Errorf("the warning does not name the events' copies:\n%s", stderr)
	}
}

// System call events from inside a frame holding a large array the thread
// never writes (memcached's sendmsg under transmit's 16 KiB of iovecs):
// the system call program's copy up to the thread's top runs through
// pages not in memory, and where it ended at the first of them every
// event there lost its callers. It copies such a range page by page, the
// missing pages left out of the unwind: once the thread's top is learned
// (its first events), its writev entries reach worker and start_thread.
func TestEventsUnwrittenFrame(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "holeframe", []string{"holeframe.c"}, "-O2", "-g", "-fomit-frame-pointer", "-pthread")
	out := rec(t)
	mustRun(t, "record", "--events", "cpu,syscalls,sched", "--syscall-windows", "off", "-o", out, "--", bin, "6000")
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var first uint64
	type entry struct {
		time    uint64
		through bool // transmit's frame is on the stack
		reached bool // so are worker and start_thread
	}
	var es []entry
	for _, s := range p.Samples {
		if s.Event != recording.EventSyscallEnter || s.Arg != unix.SYS_WRITEV {
			continue
		}
		if first == 0 {
			first = s.Time
		}
		var e entry
		e.time = s.Time
		w, st := false, false
		for _, fi := range p.Stacks[s.Stack] {
			switch p.Frames[fi].Function {
			case "transmit":
				e.through = true
			case "worker":
				w = true
			case "start_thread":
				st = true
			}
		}
		e.reached = w && st
		es = append(es, e)
	}
	late, reached, through := 0, 0, 0
	for _, e := range es {
		if e.through {
			through++
		}
		if e.time < first+uint64(300*time.Millisecond) {
			continue
		}
		late++
		if e.reached {
			reached++
		}
	}
	t.Logf("%d writev entries (%d through transmit); from 300 ms on %d of %d reach worker and start_thread", len(es), through, reached, late)
	if len(es) < 1000 || through < len(es)*99/100 {
		t.Fatalf("%d writev entries, %d through transmit; want 1000 or more, all through it", len(es), through)
	}
	if late < 500 || reached < late*99/100 {
		t.Errorf("from 300 ms on, %d of %d writev entries reach worker and start_thread; want ≥ 99%%", reached, late)
	}
}
