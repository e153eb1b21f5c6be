package importer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// importFrom imports perf script text from r into a file and loads it.
func importFrom(t *testing.T, r io.Reader) (*profile.Profile, Stats, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "imported.rec")
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := PerfScript(r, w)
	if cerr := w.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("PerfScript: %v", err)
	}
	p, err := loader.Load([]string{path}, loader.Options{})
	if err != nil {
		t.Fatalf("loading the import: %v", err)
	}
	return p, st, path
}

func importText(t *testing.T, text string) (*profile.Profile, Stats) {
	t.Helper()
	p, st, _ := importFrom(t, strings.NewReader(text))
	return p, st
}

// importErr imports text and returns the error, which must not be nil.
func importErr(t *testing.T, text string) (Stats, error) {
	t.Helper()
	w, err := recording.NewWriter(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	st, err := PerfScript(strings.NewReader(text), w)
	if err == nil {
		t.Fatalf("importing %q: no error", clip(text))
	}
	return st, err
}

// names returns the function names of a sample's stack, innermost first;
// frames without a function read as Frame.Name (object+0xoffset).
func names(p *profile.Profile, s profile.Sample) []string {
	var out []string
	for _, fi := range p.Stacks[s.Stack] {
		out = append(out, p.Frames[fi].Name())
	}
	return out
}

func frames(p *profile.Profile, s profile.Sample) []profile.Frame {
	var out []profile.Frame
	for _, fi := range p.Stacks[s.Stack] {
		out = append(out, p.Frames[fi])
	}
	return out
}

// readRecords reads every record of a recording file.
func readRecords(t *testing.T, path string) []recording.Record {
	t.Helper()
	r, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []recording.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
}

// TestWorkedExample imports IntroPerf's worked example (testdata) and reads
// it back through loader.Load.
func TestWorkedExample(t *testing.T) {
	f, err := os.Open("testdata/worked-example.perf-script")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, st, path := importFrom(t, f)
	if st.Samples != 4 || st.Skipped != 0 || st.Truncated || !reflect.DeepEqual(st.Events, map[string]int{"raw_syscalls:sys_enter": 4}) {
		t.Errorf("stats %+v", st)
	}
	if len(p.Samples) != 4 {
		t.Fatalf("%d samples, want 4", len(p.Samples))
	}
	want := [][]string{ // root first
		{"A", "B", "D"},
		{"A", "B", "D"},
		{"A", "C", "D"},
		{"A", "C"},
	}
	for i, s := range p.Samples {
		if s.Event != recording.EventSyscallEnter || s.Arg != 0 || s.Period != 0 {
			t.Errorf("sample %d: event %v arg %d period %d, want syscall-enter, 0, 0", i, s.Event, s.Arg, s.Period)
		}
		if wt := uint64(100_010_000_000 + 10_000_000*i); s.Time != wt {
			t.Errorf("sample %d: time %d, want %d", i, s.Time, wt)
		}
		if s.PID != 4242 || s.TID != 4242 || s.CPU != 1 {
			t.Errorf("sample %d: pid %d tid %d cpu %d", i, s.PID, s.TID, s.CPU)
		}
		got := names(p, s)
		for l, r := 0, len(got)-1; l < r; l, r = l+1, r-1 {
			got[l], got[r] = got[r], got[l]
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("sample %d: stack %v, want %v", i, got, want[i])
		}
		for _, fr := range frames(p, s) {
			if fr.Object != "/usr/bin/app" || fr.Kernel {
				t.Errorf("sample %d: frame %+v, want a user frame of /usr/bin/app", i, fr)
			}
		}
	}
	if th := p.Threads[4242]; th.Comm != "app" || th.PID != 4242 {
		t.Errorf("thread %+v", th)
	}
	if len(p.Metas) != 1 {
		t.Fatalf("%d Meta records", len(p.Metas))
	}
	m := p.Metas[0]
	if m.Tool != "culprit import" || m.Event != "raw_syscalls:sys_enter" || m.Extra["imported_from"] != "perf script" {
		t.Errorf("meta %+v", m)
	}
	if len(p.Sources) != 1 || !p.Sources[0].Complete {
		t.Errorf("sources %+v: want a complete recording", p.Sources)
	}
	// One Symbol per function, one Stack per distinct stack.
	count := map[recording.Kind]int{}
	for _, rec := range readRecords(t, path) {
		count[rec.Kind()]++
	}
	if count[recording.KindSymbol] != 4 || count[recording.KindStack] != 3 || count[recording.KindComm] != 1 || count[recording.KindEnd] != 1 {
		t.Errorf("record counts %v", count)
	}
}

const cpuSample = `hier  8110  2291.537887:     250000 cpu-clock: 
	ffffffff815fcdc4 finish_fault+0x394 ([kernel.kallsyms])
	ffffffff81000c82 asm_exc_page_fault+0x22 ([kernel.kallsyms])
	            117e worker+0x45 (/tmp/hier)
	            1192 dispatch_1+0xe (/tmp/hier)
	           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

`

// TestHeaders covers the header variants of perf script's field settings.
func TestHeaders(t *testing.T) {
	frame := "\t            117e worker+0x45 (/tmp/hier)\n\n"
	type want struct {
		comm            string
		pid, tid, cpu   uint32
		time, period    uint64
		event           recording.Event
		arg             uint64
		perfEvent       string
		samples, frames int
	}
	for _, tc := range []struct {
		name, text string
		want
	}{
		{"default", "hier  8110  2291.537887:     250000 cpu-clock: \n" + frame,
			want{"hier", 8110, 8110, 0, 2291_537_887_000, 250000, recording.EventCPU, 0, "cpu-clock", 1, 1}},
		{"pid cpu ns", "hier 8110/8111 [003] 2291.537887123:     250000 task-clock:ppp: \n" + frame,
			want{"hier", 8110, 8111, 3, 2291_537_887_123, 250000, recording.EventCPU, 0, "task-clock:ppp", 1, 1}},
		{"comm with spaces", "Web Content 12 4242/4243 [000] 7.5: 1000 cycles:u: \n" + frame,
			want{"Web Content 12", 4242, 4243, 0, 7_500_000_000, 1000, recording.EventCPU, 0, "cycles:u", 1, 1}},
		{"right-aligned comm, no call chain", "            hier 12159  2517.533861:     250000 cpu-clock:      55aa10ff0176 worker+0x3d (/tmp/pimp/hier)\n",
			want{"hier", 12159, 12159, 0, 2517_533_861_000, 250000, recording.EventCPU, 0, "cpu-clock", 1, 1}},
		{"hex-looking comm", "            beef 7  1.000001:     250000 cpu-clock: \n" + frame,
			want{"beef", 7, 7, 0, 1_000_001_000, 250000, recording.EventCPU, 0, "cpu-clock", 1, 1}},
		{"tracepoint", "syscalls  9167 [001]  2347.386094: raw_syscalls:sys_enter: NR 12 (0, 7ffe8adf2e7c, 0, 37f, 0, 0)\n" + frame,
			want{"syscalls", 9167, 9167, 1, 2347_386_094_000, 0, recording.EventSyscallEnter, 12, "raw_syscalls:sys_enter", 1, 1}},
		{"tracepoint with period", "syscalls  9167 [001]  2347.386094:          1 raw_syscalls:sys_exit: NR 1 = 64\n" + frame,
			want{"syscalls", 9167, 9167, 1, 2347_386_094_000, 0, recording.EventSyscallExit, 1, "raw_syscalls:sys_exit", 1, 1}},
		{"syscalls:sys_enter_write", "syscalls  9167 [001]  2347.386094: syscalls:sys_enter_write: fd: 0x00000003, buf: 0x7ffe, count: 0x00000040\n" + frame,
			want{"syscalls", 9167, 9167, 1, 2347_386_094_000, 0, recording.EventSyscallEnter, 0, "syscalls:sys_enter_write", 1, 1}},
		{"sched_switch", "syscalls  9167 [001]  2347.395956:     sched:sched_switch: prev_comm=syscalls prev_pid=9167 prev_prio=120 prev_state=D ==> next_comm=rcu_preempt next_pid=15 next_prio=120\n" + frame,
			want{"syscalls", 9167, 9167, 1, 2347_395_956_000, 0, recording.EventSwitch, 2, "sched:sched_switch", 1, 1}},
		{"sched_switch plugin", "a b  9167 [001]  2347.395956: sched:sched_switch: a b:9167 [120] S ==> swapper/1:0 [120]\n" + frame,
			want{"a b", 9167, 9167, 1, 2347_395_956_000, 0, recording.EventSwitch, 1, "sched:sched_switch", 1, 1}},
		{"no stack", "hier  8110  2291.537887:     250000 cpu-clock: \n\n",
			want{"hier", 8110, 8110, 0, 2291_537_887_000, 250000, recording.EventCPU, 0, "cpu-clock", 1, 0}},
		{"CRLF", strings.ReplaceAll("hier  8110  2291.537887:     250000 cpu-clock: \n"+frame, "\n", "\r\n"),
			want{"hier", 8110, 8110, 0, 2291_537_887_000, 250000, recording.EventCPU, 0, "cpu-clock", 1, 1}},
		{"header and side-band lines", "# ========\n# captured on    : Thu Jan  1 00:00:00 2026\n# ========\n#\n" +
			"hier 8110  2291.500000: PERF_RECORD_COMM: hier:8110/8110\n" +
			"hier  8110  2291.537887:     250000 cpu-clock: \n" + frame,
			want{"hier", 8110, 8110, 0, 2291_537_887_000, 250000, recording.EventCPU, 0, "cpu-clock", 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, st := importText(t, tc.text)
			if st.Samples != tc.samples || st.Skipped != 0 || st.Events[tc.perfEvent] != tc.samples {
				t.Fatalf("stats %+v", st)
			}
			s := p.Samples[0]
			n := 0 // switch-ins of the next thread are not perf's samples
			for _, x := range p.Samples {
				if x.Event != recording.EventSwitchIn {
					n++
				}
			}
			got := want{p.Threads[s.TID].Comm, s.PID, s.TID, s.CPU, s.Time, s.Period, s.Event, s.Arg, tc.perfEvent, n, len(p.Stacks[s.Stack])}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
			if p.Metas[0].Event != tc.perfEvent {
				t.Errorf("meta event %q", p.Metas[0].Event)
			}
		})
	}
}

func TestParseFrame(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want frame
		ok   bool
	}{
		{"\t            117e worker+0x45 (/tmp/hier)", frame{addr: 0x117e, sym: "worker", off: 0x45, hasOff: true, dso: "/tmp/hier"}, true},
		{"\tffffffff8110410b srso_alias_return_thunk+0x0 ([kernel.kallsyms])", frame{addr: 0xffffffff8110410b, sym: "srso_alias_return_thunk", hasOff: true, dso: "[kernel.kallsyms]"}, true},
		{"\t               0 [unknown] ([unknown])", frame{dso: "[unknown]"}, true},
		{"\t    7f0012345678 [unknown] (/usr/lib/libfoo.so)", frame{addr: 0x7f0012345678, dso: "/usr/lib/libfoo.so"}, true},
		{"\tffffffff8223aad2 mas_preallocate", frame{addr: 0xffffffff8223aad2, sym: "mas_preallocate"}, true},
		{"\t55aa10ff0176", frame{addr: 0x55aa10ff0176}, true},
		{"\t1234 worker (/tmp/my dir/hier (deleted))", frame{addr: 0x1234, sym: "worker", dso: "/tmp/my dir/hier (deleted)"}, true},
		{"\t1234 ns::f(int, char const*) const+0x1c (/usr/lib/libx.so)", frame{addr: 0x1234, sym: "ns::f(int, char const*) const", off: 0x1c, hasOff: true, dso: "/usr/lib/libx.so"}, true},
		{"\t1234 operator()(int)+0x1c", frame{addr: 0x1234, sym: "operator()(int)", off: 0x1c, hasOff: true}, true},
		{"\t1234 foo(int)", frame{addr: 0x1234, sym: "foo(int)"}, true},
		{"\t1bccb _dl_start_final+0x55b (inlined)", frame{addr: 0x1bccb, sym: "_dl_start_final", off: 0x55b, hasOff: true, dso: inlinedDso}, true},
		{"\t1234 x+0xzz (a)", frame{addr: 0x1234, sym: "x+0xzz", dso: "a"}, true},
		{"\t1234 (/tmp/hier)", frame{addr: 0x1234, dso: "/tmp/hier"}, true},
		{"\thier.c:12", frame{}, false},
		{"\t12345678901234567 x (y)", frame{}, false},
		{"", frame{}, false},
		{"\t+0x10", frame{}, false},
	} {
		got, ok := parseFrame(tc.in)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseFrame(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// Switches give the next thread a switch-in; wake-ups name the woken thread.
func TestSchedEvents(t *testing.T) {
	text := "a  10 [001]  1.000001: sched:sched_switch: prev_comm=a prev_pid=10 prev_prio=120 prev_state=S ==> next_comm=b next_pid=11 next_prio=120\n\n" +
		"b  11 [001]  1.000002: sched:sched_waking: comm=a pid=10 prio=120 target_cpu=001\n\n" +
		"b  11 [001]  1.000003: sched:sched_wakeup: a:10 [120] CPU:001\n\n"
	p, st := importText(t, text)
	if st.Samples != 3 {
		t.Errorf("stats %+v", st)
	}
	type ev struct {
		e        recording.Event
		tid, arg uint64
	}
	var got []ev
	for _, s := range p.Samples {
		got = append(got, ev{s.Event, uint64(s.TID), s.Arg})
	}
	want := []ev{{recording.EventSwitch, 10, 1}, {recording.EventSwitchIn, 11, 0}, {recording.EventWakeup, 11, 10}, {recording.EventWakeup, 11, 10}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("samples %v, want %v", got, want)
	}
}

func TestPrevState(t *testing.T) {
	for in, want := range map[string]uint64{
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=R ==> next_comm=b next_pid=2 next_prio=120":     0,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=R+ ==> next_comm=b next_pid=2 next_prio=120":    0,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120":     1,
		"prev_comm=a b prev_pid=1 prev_prio=120 prev_state=D ==> next_comm=b next_pid=2 next_prio=120":   2,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=T ==> next_comm=b next_pid=2 next_prio=120":     4,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=t ==> next_comm=b next_pid=2 next_prio=120":     8,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=X ==> next_comm=b next_pid=2 next_prio=120":     16,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=Z ==> next_comm=b next_pid=2 next_prio=120":     32,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=I ==> next_comm=b next_pid=2 next_prio=120":     128,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=S|D ==> next_comm=b next_pid=2 next_prio=120":   3,
		"prev_comm=a prev_pid=1 prev_prio=120 prev_state=0x402 ==> next_comm=b next_pid=2 next_prio=120": 0x402,
		"a:1 [120] S ==> b:2 [120]":  1,
		"a:1 [120] R+ ==> b:2 [120]": 0,
		"a:1 [120] D ==> b:2 [120]":  2,
		"garbage":                    0,
		"":                           0,
	} {
		if got := prevState(in); got != want {
			t.Errorf("prevState(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestSyscallNR(t *testing.T) {
	for in, want := range map[string]uint64{
		"NR 1 (3, 7ffe8adf2e00, 40, 7f62652ab4f0, 1999999999999999, 0)": 1,
		"NR 231 = 0":                  231,
		"__syscall_nr=59 filename: 0": 59,
		"fd: 0x00000003, buf: 0x7ffe": 0,
		"NR -1 (0)":                   0,
		"":                            0,
	} {
		if got := syscallNR(in); got != want {
			t.Errorf("syscallNR(%q) = %d, want %d", in, got, want)
		}
	}
}

const namesText = `prog 100/101 [000] 10.000001:     250000 cpu-clock: 
	ffffffff815fcdc4 finish_fault+0x394 ([kernel.kallsyms])
	ffffffffc0a01010 nft_do_chain+0x10 ([nf_tables])
	ffffffff81000c82 asm_exc_page_fault+0x0 ([kernel.kallsyms])
	            1108 D+0x8 (/usr/bin/app)
	            1200 B+0x0 (/usr/bin/app)
	            1320 A+0x20 (/usr/bin/app)
	           2724a __libc_start_call_main+0x7a (/usr/lib/libc.so.6)
	            5000 [unknown] (/usr/bin/app)
	               0 [unknown] ([unknown])

prog 100/101 [000] 10.000002:     250000 cpu-clock: 
	            11ff A+0x7f (/usr/lib/libc.so.6)
	            1310 ns::f(int) const+0x10 (/usr/lib/libc.so.6)
	            1401 C (/usr/bin/app)
	            1bccb _dl_start_final+0x55b (inlined)
	            1bccb _dl_start+0x55b (/lib64/ld-linux-x86-64.so.2)
	            1fc47 __brk+0x7 (inlined)
	            20ca3 __mmap64+0x13 (inlined)
	            20ca3 __mmap64+0x13 (inlined)
	            a780 __minimal_malloc+0xa0 (/lib64/ld-linux-x86-64.so.2)
	ffffffffffffffff [unknown] ([unknown])

prog 100/101 [000] 10.000003:     250000 cpu-clock: 
	ffffffff815fcdc4 finish_fault+0x394 ([kernel.kallsyms])
	ffffffff81423c90 __inlined_k+0x180 (inlined)
	ffffffff81423c90 syscall_trace_enter+0x180 ([kernel.kallsyms])
	ffffffff815fcdd0 [unknown] ([kernel.kallsyms])
	ffffffffff600000 [unknown] ([vsyscall])
	            1bccb _dl_start+0x55b (/lib64/ld-linux-x86-64.so.2)

`

// TestNames checks that every frame comes back from loader.Load with the
// name perf gave it: kernel and module frames, return addresses at the very
// start of a function (+0x0), frames without +0xoff or without a dso, C++
// names, functions inlined by --call-graph dwarf, and frames perf could not
// name.
func TestNames(t *testing.T) {
	text := namesText
	p, st := importText(t, text)
	if st.Samples != 3 || st.Skipped != 0 {
		t.Fatalf("stats %+v", st)
	}
	want := [][]string{
		{"finish_fault", "nft_do_chain", "asm_exc_page_fault", "D", "B", "A", "__libc_start_call_main", "app+0x4fff"},
		{"A", "ns::f(int) const", "C", "_dl_start_final", "_dl_start", "__brk", "__mmap64", "__mmap64", "__minimal_malloc"},
		{"finish_fault", "__inlined_k", "syscall_trace_enter", "[kernel.kallsyms]+0xffffffff815fcdd0", "[unknown]+0xffffffffff600000", "_dl_start"},
	}
	for i, s := range p.Samples {
		if got := names(p, s); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("sample %d:\n got  %q\n want %q", i, got, want[i])
		}
	}
	fs := frames(p, p.Samples[0])
	if !fs[0].Kernel || !fs[1].Kernel || fs[1].Object != "[nf_tables]" || fs[3].Kernel || fs[3].Object != "/usr/bin/app" {
		t.Errorf("frames %+v", fs)
	}
	if fs := frames(p, p.Samples[1]); fs[0].Object != "/usr/lib/libc.so.6" || fs[4].Object != "/lib64/ld-linux-x86-64.so.2" {
		t.Errorf("frames %+v", fs)
	}
}

// TestAbsoluteAddresses: perf versions that print mapped addresses keep
// them in the recording.
func TestAbsoluteAddresses(t *testing.T) {
	text := `hier 8110  2291.537887:     250000 cpu-clock: 
	ffffffff815fcdc4 finish_fault+0x394 ([kernel.kallsyms])
	    55aa10ff017e worker+0x45 (/tmp/hier)
	    55aa10ff0192 dispatch_1+0xe (/tmp/hier)
	    7f62652ab24a __libc_start_call_main+0x7a (/usr/lib/libc.so.6)
	    7f62652ab000 [unknown] (/usr/lib/libc.so.6)

`
	p, _, path := importFrom(t, strings.NewReader(text))
	if got, want := names(p, p.Samples[0]), []string{"finish_fault", "worker", "dispatch_1", "__libc_start_call_main", "[unknown]+0x7f62652ab000"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	for _, rec := range readRecords(t, path) {
		if st, ok := rec.(*recording.Stack); ok {
			if want := []uint64{0x55aa10ff017e, 0x55aa10ff0192, 0x7f62652ab24a, 0x7f62652ab000}; !reflect.DeepEqual(st.User, want) {
				t.Errorf("user stack %x, want %x", st.User, want)
			}
			if want := []uint64{0xffffffff815fcdc4}; !reflect.DeepEqual(st.Kernel, want) {
				t.Errorf("kernel stack %x, want %x", st.Kernel, want)
			}
		}
	}
}

// TestEvents: several events in one input; events culprit has no kind for
// are counted and left out; cycles keep their period in cycles.
func TestEvents(t *testing.T) {
	text := `a 1 [000] 1.000000:     1000000 cycles:P: 
	            1108 D+0x8 (/usr/bin/app)

a 1 [000] 1.000001:     33 instructions: 
	            1108 D+0x8 (/usr/bin/app)

a 1 [000] 1.000002: irq:irq_handler_entry: irq=1 name=i8042
	            1108 D+0x8 (/usr/bin/app)

a 1 [000] 1.000003:     250000 cpu-clock: 
	            1108 D+0x8 (/usr/bin/app)

`
	p, st := importText(t, text)
	if st.Samples != 2 || !reflect.DeepEqual(st.Events, map[string]int{"cycles:P": 1, "cpu-clock": 1}) ||
		!reflect.DeepEqual(st.Ignored, map[string]int{"instructions": 1, "irq:irq_handler_entry": 1}) {
		t.Errorf("stats %+v", st)
	}
	if len(p.Samples) != 2 || p.Samples[0].Period != 1000000 || p.Samples[1].Period != 250000 {
		t.Errorf("samples %+v", p.Samples)
	}
	m := p.Metas[0]
	if m.Event != "cycles:P,cpu-clock" || m.Extra["period_unit"] == "" {
		t.Errorf("meta %+v", m)
	}
	_, err := importErr(t, "a 1 [000] 1.000001:     33 instructions: \n\t1108 D+0x8 (/usr/bin/app)\n\n")
	if !strings.Contains(err.Error(), "instructions (1)") || !strings.Contains(err.Error(), "cpu-clock") {
		t.Errorf("error %q", err)
	}
}

// TestDamaged: what cannot be imported says why; what can, is.
func TestDamaged(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"garbage", "hello world\nthis is not perf\n", `line 1: expected a perf script sample header`},
		{"binary", "\x00\x01\x02\xff\xfe\n\x03", `line 1: expected`},
		{"empty", "", "the input is empty"},
		{"blank", "\n\n  \n# comment\n", "the input is empty"},
		{"perf.data", "PERFILE2\x00\x00\x00", "perf.data file"},
		{"recording", recording.Magic + "\x01\x00", "already a culprit recording"},
		{"frames only", "\t1108 D+0x8 (/usr/bin/app)\n\t1214 B+0x14 (/usr/bin/app)\n", `line 1: expected a perf script sample header`},
		{"cut in the first sample", "a 1 [000] 1.000000:     250000 cpu-clock: \n\t1108 D+0x8 (/usr/bi", "ends inside its first sample"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importErr(t, tc.text)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}

	whole := cpuSample + strings.Replace(cpuSample, "2291.537887", "2291.538137", 1)
	// Cut anywhere inside the second sample: the first is imported, the
	// second is left out.
	second := len(cpuSample)
	for cut := second + 1; cut < len(whole)-1; cut++ {
		if whole[cut-1] == '\n' {
			continue // cut between lines: the sample looks whole
		}
		p, st := importText(t, whole[:cut])
		if st.Samples != 1 || !st.Truncated || len(p.Samples) != 1 || p.Samples[0].Time != 2291_537_887_000 {
			t.Fatalf("cut at %d (%q): stats %+v", cut, whole[second:cut], st)
		}
		if len(p.Stacks[p.Samples[0].Stack]) != 5 {
			t.Fatalf("cut at %d: first sample lost frames", cut)
		}
	}
	// The input ends without the blank line after the last sample.
	if _, st := importText(t, strings.TrimSuffix(whole, "\n")); st.Samples != 2 || st.Truncated {
		t.Errorf("without the final blank line: stats %+v", st)
	}

	// Lines that cannot be parsed between good ones are skipped and counted.
	text := "garbage first\n" + cpuSample + "\tsrcline.c:12\nPERF says hi\n" + cpuSample + "\t1108 D+0x8 (/usr/bin/app)\n"
	p, st := importText(t, text)
	if st.Samples != 2 || st.Skipped != 4 || len(p.Samples) != 2 {
		t.Errorf("stats %+v", st)
	}
	if got := len(p.Stacks[p.Samples[0].Stack]); got != 5 {
		t.Errorf("first stack has %d frames, want 5", got)
	}
}

// oneByte hides Seek: the input is copied to a temporary file.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

func TestUnseekableInput(t *testing.T) {
	data, err := os.ReadFile("testdata/worked-example.perf-script")
	if err != nil {
		t.Fatal(err)
	}
	p1, st1, path1 := importFrom(t, bytes.NewReader(data))
	p2, st2, path2 := importFrom(t, oneByte{bytes.NewReader(data)})
	if !reflect.DeepEqual(st1, st2) || len(p1.Samples) != len(p2.Samples) {
		t.Errorf("stats %+v and %+v", st1, st2)
	}
	b1, _ := os.ReadFile(path1)
	b2, _ := os.ReadFile(path2)
	if !bytes.Equal(b1, b2) {
		t.Errorf("the recordings differ")
	}
	// An input read from its middle is imported from there.
	r := bytes.NewReader(append([]byte("garbage\n"), data...))
	r.Seek(8, io.SeekStart)
	if _, st, _ := importFrom(t, r); st.Skipped != 0 || st.Samples != 4 {
		t.Errorf("from the middle: stats %+v", st)
	}
}
