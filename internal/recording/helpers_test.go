package recording

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// allRecords returns one record of every kind with every field set.
func allRecords() []Record {
	return []Record{
		&Meta{
			Tool: "culprit test", Command: []string{"./prog", "-x"}, AttachPID: 4242,
			Hostname: "host", KernelRelease: "6.8.0-test", Arch: "amd64",
			StartUnixNano: 1700000000123456789, StartClock: 260000000000000,
			Event: "cpu-clock", Frequency: 99, CallGraph: "fp", StackBytes: 8192,
			Extra: map[string]string{"k": "v"},
		},
		&Mmap{Time: 260000000000001, PID: 4123, TID: 4124, Start: 0x55a4c3e00000, Len: 0x200000,
			Pgoff: 0x1000, Prot: 5, Flags: 2, BuildID: []byte{0xde, 0xad, 0xbe, 0xef, 0}, Path: "/usr/bin/prog"},
		&Comm{Time: 260000000000002, PID: 4123, TID: 4125, Exec: true, Name: "prog"},
		&Task{Exit: false, Time: 260000000000003, PID: 4123, PPID: 1, TID: 4126, PTID: 4123},
		&Task{Exit: true, Time: 260000000000004, PID: 4123, PPID: 1, TID: 4126, PTID: 4123},
		&Stack{ID: 1, Kernel: []uint64{0xffffffff81234567, 0xffffffff81000010, 0xffffffffc0a01234},
			User: []uint64{0x55a4c3e01234, 0x55a4c3e01000, 0x7f0011223344, 0x55a4c3e00010}},
		&Sample{Time: 260000000000005, PID: 4123, TID: 4124, CPU: 7, Period: 10101010, StackID: 1, Truncated: true},
		&Sample{Time: 260000000000005, PID: 4123, TID: 4124, CPU: 1, StackID: 1, Event: EventSwitch, Arg: 1, RunDelay: 1234567890123, HasRunDelay: true},
		&Sample{Time: 260000000000005, PID: 4123, TID: 4124, CPU: 1, StackID: 1, Event: EventSwitch, Arg: 1, RunDelay: 1234567890123, HasRunDelay: true,
			ExecRuntime: 9876543210987, HasExecRuntime: true},
		&Sample{Time: 260000000000005, PID: 4123, TID: 4124, CPU: 1, Event: EventSwitchIn, ExecRuntime: 9876543210987, HasExecRuntime: true},
		&Sample{Time: 260000000000005, PID: 4123, TID: 4124, Event: EventSyscallEnter, Arg: 231},
		&Lost{Time: 260000000000006, Reason: LostThrottled, Count: 12},
		&Lost{Time: 260000000000006, Reason: LostRing, Count: 3, Since: 260000000000001, CPU: 1},
		&Symbol{PID: 4123, Addr: 0x7f0011223300, Size: 0x80, Name: "jit_fn", Object: "/tmp/perf-4123.map"},
		&ValueSource{ID: 3, Class: SourceVariable, Name: "available_mem", Function: "#global", File: "mem.c", Line: 12,
			Type: "unsigned long", Tags: "cond", Global: true, Pointer: true, Enum: "LOW=0,HIGH=7", Schema: "9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c"},
		&Value{Time: 260000000000005, PID: 4123, TID: 4124, Source: 3, Depth: 2, Type: ValueFloat, PC: 0x55a4c3e01234, Bits: 0x400921fb54442d18},
		&Value{Time: 260000000000005, PID: 4123, TID: 4124, Source: 3, Type: ValueMissing},
		&KernelSymbol{Addr: 0xffffffff81234500, Size: 0x120, Name: "do_syscall_64", Module: "kvm"},
		&Object{Name: "[vdso]", BuildID: []byte{1, 2, 3}, Data: bytes.Repeat([]byte{0x7f, 'E', 'L', 'F', 0}, 100)},
		&Probe{ID: 1, Function: "fib", Object: "/usr/bin/prog", BuildID: []byte{1, 2, 3}, Offset: 0x1140, Every: 10, Params: []string{"n int", "s char *"}, Ret: "long"},
		&Probe{ID: 2, Function: "main", Object: "/usr/bin/prog", Offset: 0x1040, Since: 123456789},
		&Call{Start: 260000000000006, End: 260000000001006, Child: 400, PID: 4123, TID: 4124, Probe: 1, Caller: 2, Depth: 1, Site: 0x55a4c3e01239, Args: []uint64{20, 0x7ffc0000}, Ret: 6765, Strs: []string{"GET /", ""}},
		&Call{Start: 260000000000006, End: 260000000090006, Child: 30000, PID: 4123, TID: 4124, Probe: 2, Flags: CallCPU, Off: 50000, ChildOff: 20000},
		&Call{Start: 260000000000006, End: 260000000000106, PID: 4123, TID: 4125, Probe: 2, Flags: CallUnreturned},
		&Call{Start: 260000000000006, End: 260000000000906, PID: 4123, TID: 4126, Probe: 2, Goroutine: 0xc000102000},
		&ProbesOff{Start: 260000000000006, End: 260000000500006},
		&SyscallWindow{Start: 260000000000006, End: 260000010000006, On: 10000000, Period: 100000000},
		&SyscallWindow{Start: 260000000000006, End: 260000200000006},
		&End{Time: 260000000000007, Samples: 1, Lost: 12, Throttled: 3, ExitCode: -1, Calls: 2},
	}
}

// zeroRecords returns one record of every kind with every field zero.
func zeroRecords() []Record {
	return []Record{&Meta{}, &Mmap{}, &Comm{}, &Task{}, &Task{Exit: true}, &Stack{ID: 1},
		&Sample{}, &Lost{}, &KernelSymbol{}, &Object{}, &End{}, &Symbol{}, &ValueSource{}, &Value{}, &Probe{ID: 1}, &Call{}, &ProbesOff{}, &SyscallWindow{}}
}

// encodeRecords returns the bytes of a recording holding recs.
func encodeRecords(t testing.TB, recs []Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != w.Bytes() {
		t.Fatalf("Bytes() = %d, wrote %d", w.Bytes(), buf.Len())
	}
	return buf.Bytes()
}

// frameEnds returns the offset after each record of an intact recording.
func frameEnds(t testing.TB, data []byte) []int {
	t.Helper()
	var ends []int
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int(r.Salvage().Bytes))
	}
	return ends
}

func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "test.rec")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll reads every record of the file at path.
func readAll(t testing.TB, path string) ([]Record, Salvage) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return drain(t, r)
}

func drain(t testing.TB, r *Reader) ([]Record, Salvage) {
	t.Helper()
	var recs []Record
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return recs, r.Salvage()
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		recs = append(recs, rec)
	}
}

// profileGen makes realistic samples: a monotonic clock after days of uptime,
// a 99 Hz cpu-clock period with jitter, a few threads and a pool of stacks of
// a PIE binary and libc.
type profileGen struct {
	rng    *rand.Rand
	time   uint64
	stacks [][2][]uint64
}

func newProfileGen(nstacks int) *profileGen {
	g := &profileGen{rng: rand.New(rand.NewPCG(1, 2)), time: 3 * 24 * 3600 * 1e9}
	for range nstacks {
		g.stacks = append(g.stacks, g.stack(10))
	}
	return g
}

// stack returns a kernel and user stack with n user frames.
func (g *profileGen) stack(n int) [2][]uint64 {
	const exe, libc = 0x55a4c3e00000, 0x7f3a1c200000
	var kernel, user []uint64
	if g.rng.IntN(5) == 0 {
		for range 4 {
			kernel = append(kernel, 0xffffffff81000000+g.rng.Uint64N(0x1000000))
		}
	}
	for i := range n {
		if i == 0 && g.rng.IntN(4) == 0 {
			user = append(user, libc+g.rng.Uint64N(0x180000))
			continue
		}
		user = append(user, exe+g.rng.Uint64N(0x400000))
	}
	return [2][]uint64{kernel, user}
}

func (g *profileGen) sample() (Sample, []uint64, []uint64) {
	g.time += 10_000_000 + g.rng.Uint64N(200_000)
	st := g.stacks[g.rng.IntN(len(g.stacks))]
	tid := uint32(4123 + g.rng.IntN(8))
	return Sample{Time: g.time, PID: 4123, TID: tid, CPU: uint32(g.rng.IntN(8)),
		Period: 10_101_010 - 50_000 + g.rng.Uint64N(100_000)}, st[0], st[1]
}
