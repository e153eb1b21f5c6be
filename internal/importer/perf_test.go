package importer

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// These tests import what the real perf prints for real programs and check
// the import against perf's own text: every sample, every frame's name, the
// events and their counts.

func perfInstalled() bool {
	_, err := exec.LookPath("perf")
	return err == nil
}

// perfScript records cmd with perf record args and returns the text of perf
// script and the sample count per event as perf script -F event counts them.
func perfScript(t *testing.T, record []string, cmd ...string) (string, map[string]int) {
	t.Helper()
	testutil.NeedRoot(t)
	testutil.Need(t, perfInstalled(), "needs the perf tool")
	data := filepath.Join(t.TempDir(), "perf.data")
	// -N: perf leaves its build-id cache (~/.debug) alone; the binaries
	// are at their paths while perf script reads them.
	args := append(append([]string{"record", "-q", "-N", "-o", data}, record...), "--")
	args = append(args, cmd...)
	if out, err := exec.Command("perf", args...).CombinedOutput(); err != nil {
		t.Fatalf("perf %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	text, err := exec.Command("perf", "script", "-i", data).Output()
	if err != nil {
		t.Fatalf("perf script: %v", err)
	}
	events, err := exec.Command("perf", "script", "-i", data, "-F", "event", "-G").Output()
	if err != nil {
		t.Fatalf("perf script -F event: %v", err)
	}
	counts := map[string]int{}
	for _, l := range strings.Split(string(events), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			counts[strings.TrimSuffix(l, ":")]++
		}
	}
	return string(text), counts
}

// perfSample is a sample as the test reads perf script's text, independently
// of the importer: its event, its payload, and its frames' names innermost
// first ("" for [unknown]; the end-of-chain frame 0 left out).
type perfSample struct {
	event, payload string
	names          []string
	kernel         []bool
}

var (
	testHeaderRE = regexp.MustCompile(`^\S.*?\s\d+\.\d+:\s+(?:\d+\s+)?(\S+):\s*(.*)$`)
	testFrameRE  = regexp.MustCompile(`^\t\s*([0-9a-f]+) (.*) \((.*)\)$`)
	testOffRE    = regexp.MustCompile(`\+0x[0-9a-f]+$`)
)

func parsePerf(t *testing.T, text string) []perfSample {
	t.Helper()
	var out []perfSample
	for _, block := range strings.Split(text, "\n\n") {
		lines := strings.Split(strings.Trim(block, "\n"), "\n")
		if lines[0] == "" {
			continue
		}
		m := testHeaderRE.FindStringSubmatch(lines[0])
		if m == nil {
			t.Fatalf("test parser: header %q", lines[0])
		}
		s := perfSample{event: m[1], payload: m[2]}
		user := false
		for _, l := range lines[1:] {
			f := testFrameRE.FindStringSubmatch(l)
			if f == nil {
				t.Fatalf("test parser: frame %q", l)
			}
			name := testOffRE.ReplaceAllString(f[2], "")
			if (f[1] == "0" || f[1] == "ffffffffffffffff") && name == "[unknown]" {
				continue // the end of the chain
			}
			kernel := !user && strings.HasPrefix(f[1], "ffff") && f[3] != "[vsyscall]"
			user = !kernel
			if name == "[unknown]" {
				name = ""
			} else {
				name = symbol.CleanName(name)
			}
			s.names = append(s.names, name)
			s.kernel = append(s.kernel, kernel)
		}
		out = append(out, s)
	}
	return out
}

// importPerf imports perf script text and checks every sample against it.
func importPerf(t *testing.T, text string, counts map[string]int) (*profile.Profile, []perfSample) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "perf.perf-script")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, st, _ := importFrom(t, f)
	want := parsePerf(t, text)
	if st.Skipped != 0 || st.Truncated || len(st.Ignored) != 0 {
		t.Errorf("stats %+v", st)
	}
	total := 0
	for ev, n := range counts {
		total += n
		if st.Events[ev] != n {
			t.Errorf("%s: imported %d samples, perf script has %d", ev, st.Events[ev], n)
		}
	}
	// The switch-ins the importer adds for sched_switch's next thread are
	// not perf's samples: the profile returned holds perf's only, in the
	// text's order.
	var perfs []profile.Sample
	for _, s := range p.Samples {
		if s.Event != recording.EventSwitchIn {
			perfs = append(perfs, s)
		}
	}
	if len(perfs) != total || len(want) != total || st.Samples != total {
		t.Fatalf("%d samples loaded, %d imported, %d in the text, perf counts %d", len(perfs), st.Samples, len(want), total)
	}
	bad := 0
	for i, s := range perfs {
		fs := frames(p, s)
		var got []string
		var kernel []bool
		for _, f := range fs {
			got = append(got, f.Function)
			kernel = append(kernel, f.Kernel)
		}
		if strings.Join(got, "\x00") != strings.Join(want[i].names, "\x00") || len(kernel) != len(want[i].kernel) {
			if bad++; bad <= 5 {
				t.Errorf("sample %d (%s):\n loaded %q\n perf   %q", i, want[i].event, got, want[i].names)
			}
			continue
		}
		for j := range kernel {
			if kernel[j] != want[i].kernel[j] {
				t.Errorf("sample %d frame %d %q: kernel %v, perf says %v", i, j, got[j], kernel[j], want[i].kernel[j])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d samples have other names than perf's", bad, len(perfs))
	}
	p.Samples = perfs
	return p, want
}

// has reports whether a sample's stack holds the functions path, innermost
// first, one right after the other.
func has(p *profile.Profile, s profile.Sample, path ...string) bool {
	fs := frames(p, s)
	for i := 0; i+len(path) <= len(fs); i++ {
		ok := true
		for j, name := range path {
			if fs[i+j].Function != name {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// TestPerfCPUClock: perf record -e cpu-clock -g of hier, built with frame
// pointers.
func TestPerfCPUClock(t *testing.T) {
	bin := testutil.C(t, "hier", []string{"hier.c"}, "-O0", "-g", "-fno-omit-frame-pointer")
	text, counts := perfScript(t, []string{"-e", "cpu-clock", "-g"}, bin, "3")
	p, _ := importPerf(t, text, counts)
	if counts["cpu-clock"] < 100 {
		t.Fatalf("only %d cpu-clock samples", counts["cpu-clock"])
	}
	inWorker := 0
	for _, s := range p.Samples {
		if s.Event != recording.EventCPU || s.Period == 0 {
			t.Fatalf("sample %+v: want a CPU sample with a period", s)
		}
		if has(p, s, "worker", "dispatch_2", "main") {
			inWorker++
		}
	}
	// worker <- dispatch_2 <- main holds about 2/3 of the time.
	if share := float64(inWorker) / float64(len(p.Samples)); share < 0.5 || share > 0.8 {
		t.Errorf("worker <- dispatch_2 <- main in %.0f%% of the samples, want about 67%%", 100*share)
	}
	if p.Metas[0].Event != "cpu-clock" {
		t.Errorf("meta event %q", p.Metas[0].Event)
	}
}

// TestPerfKernel: the kernel frames of write(2), from cpu-clock samples of
// syscalls: every sample perf's text puts in a *sys_write* kernel function
// is imported there, with the kernel's object. The share of such samples
// is the machine's, not the importer's (on a loaded machine preemption and
// interrupts on the way back to user mode take a part that grows with the
// load; another tool tracing system calls adds time in syscall_trace_enter
// and syscall_exit_work), so it is logged and only required to be there.
func TestPerfKernel(t *testing.T) {
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g")
	text, counts := perfScript(t, []string{"-e", "cpu-clock", "-g"}, bin, "1s")
	p, want := importPerf(t, text, counts)
	perfWrites := 0
	for _, w := range want {
		for j, name := range w.names {
			if w.kernel[j] && strings.Contains(name, "sys_write") {
				perfWrites++
				break
			}
		}
	}
	writes, hooked := 0, 0
	for _, s := range p.Samples {
		write, hook := false, false
		for _, f := range frames(p, s) {
			if f.Kernel && strings.Contains(f.Function, "sys_write") && f.Object == "[kernel.kallsyms]" {
				write = true
			}
			if f.Kernel && (f.Function == "syscall_trace_enter" || f.Function == "syscall_exit_work") {
				hook = true
			}
		}
		switch {
		case write:
			writes++
		case hook:
			hooked++
		}
	}
	t.Logf("%d of %d samples in a *sys_write* kernel function, %d more in system call tracing hooks", writes, len(p.Samples)-hooked, hooked)
	if writes != perfWrites {
		t.Errorf("%d samples imported in a *sys_write* function of [kernel.kallsyms], perf's text has %d", writes, perfWrites)
	}
	// A second of writes: at 999 Hz, hundreds of samples.
	if writes < 50 {
		t.Errorf("%d samples in a *sys_write* kernel function, want 50 or more", writes)
	}
}

// TestPerfTracepoints: system call entries and context switches, with
// frame-pointer call chains and with --call-graph dwarf (which also prints
// inlined functions).
func TestPerfTracepoints(t *testing.T) {
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g")
	for _, cg := range [][]string{{"-g"}, {"--call-graph", "dwarf,4096"}} {
		t.Run(cg[len(cg)-1], func(t *testing.T) {
			// perf loses events when it is not scheduled to drain its
			// buffer (a busy machine); 32 MiB hold some 7000 of the
			// 20000 entries even with stacks of 4 KiB, so perf records
			// that many whatever the load. The checks below compare the
			// import with what perf recorded.
			record := append([]string{"-m", "32M", "-e", "raw_syscalls:sys_enter", "-e", "sched:sched_switch"}, cg...)
			text, counts := perfScript(t, record, bin, "20000")
			p, want := importPerf(t, text, counts)
			if counts["raw_syscalls:sys_enter"] < 5000 {
				t.Fatalf("perf counts %v", counts)
			}
			if ev := p.Metas[0].Event; ev != "raw_syscalls:sys_enter" && ev != "raw_syscalls:sys_enter,sched:sched_switch" && ev != "sched:sched_switch,raw_syscalls:sys_enter" {
				t.Errorf("meta event %q", ev)
			}
			nr := regexp.MustCompile(`^NR (\d+) `)
			state := regexp.MustCompile(`prev_state=(\S+)`)
			writes, withCaller, kernelEntry := 0, 0, 0
			for i, s := range p.Samples {
				switch want[i].event {
				case "raw_syscalls:sys_enter":
					m := nr.FindStringSubmatch(want[i].payload)
					if s.Event != recording.EventSyscallEnter || m == nil || m[1] != strconv.FormatUint(s.Arg, 10) || s.Period != 0 {
						t.Fatalf("sample %d: %+v, perf says %s %s", i, s, want[i].event, want[i].payload)
					}
					if s.Arg == 1 {
						writes++
						if has(p, s, "write_many") {
							withCaller++
						}
					}
				case "sched:sched_switch":
					m := state.FindStringSubmatch(want[i].payload)
					if s.Event != recording.EventSwitch || m == nil || s.Arg != map[string]uint64{"R": 0, "R+": 0, "S": 1, "D": 2, "T": 4, "t": 8, "X": 16, "Z": 32, "P": 64, "I": 128}[m[1]] {
						t.Fatalf("sample %d: %+v, perf says %s %s", i, s, want[i].event, want[i].payload)
					}
				}
				if has(p, s, "do_syscall_64") {
					kernelEntry++
				}
			}
			if writes < counts["raw_syscalls:sys_enter"]*9/10 {
				t.Errorf("%d write(2) entries of %d", writes, counts["raw_syscalls:sys_enter"])
			}
			if kernelEntry < len(p.Samples)*9/10 {
				t.Errorf("do_syscall_64 in %d of %d samples", kernelEntry, len(p.Samples))
			}
			// Frame pointers stop in libc's write (built without them); DWARF
			// unwinding reaches write_many.
			if cg[0] != "-g" && withCaller < writes*9/10 {
				t.Errorf("write_many under %d of %d write(2) entries", withCaller, writes)
			}
			if cg[0] != "-g" && !strings.Contains(text, "(inlined)") {
				t.Logf("perf printed no inlined functions")
			}
		})
	}
}
