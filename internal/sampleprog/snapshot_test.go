package sampleprog

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/testutil"
)

func TestMergeRanges(t *testing.T) {
	got := MergeRanges([][2]uint64{{100, 200}, {0, 10}, {150, 300}, {20, 30}, {1000, 1100}, {400, 500}}, 3)
	want := [][2]uint64{{0, 300}, {400, 500}, {1000, 1100}} // the smallest gaps close first
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("MergeRanges = %v, want %v", got, want)
	}
	if got := MergeRanges(nil, 4); len(got) != 0 {
		t.Errorf("MergeRanges(nil) = %v", got)
	}
}

// Both variants of the program pass the kernel's verifier.
func TestLoads(t *testing.T) {
	testutil.NeedRoot(t)
	for _, o := range []Options{
		{Snapshots: true, Chase: true}, {Snapshots: true}, {Jitter: Jitter{Min: 5, Max: 15}},
		{Jitter: Jitter{Min: 10, Max: 10}, Snapshots: true, Chase: true}, {Jitter: Jitter{Min: 8, Max: 12}, Snapshots: true},
		{Stack: true}, {Stack: true, Jitter: Jitter{Min: 8, Max: 12}}, {Stack: true, Snapshots: true, Chase: true},
	} {
		tk, err := New(o)
		if err != nil {
			t.Errorf("%+v: %v", o, err)
			continue
		}
		tk.Close()
	}
	if _, err := New(Options{Jitter: Jitter{Min: 0, Max: 3}}); err == nil {
		t.Errorf("a jitter range from 0 ticks was accepted")
	}
}

func TestSnapshotRead(t *testing.T) {
	s := &Snapshot{Chunks: []Chunk{{Addr: 100, Data: []byte{1, 2, 3, 4}}, {Addr: 104, Data: []byte{5, 6}}}}
	buf := make([]byte, 6)
	if err := s.Read(100, buf); err != nil || fmt.Sprint(buf) != "[1 2 3 4 5 6]" {
		t.Errorf("Read across two copies = %v, %v", buf, err)
	}
	if err := s.Read(103, make([]byte, 4)); err != ErrNotCopied {
		t.Errorf("Read past the copies: %v, want ErrNotCopied", err)
	}
}

// TestCopiesAtSamples runs a real program under a cpu-clock event with the
// program attached, and checks that the snapshots hold a planned global,
// a node reached through a planned pointer, and a node reached only by
// chasing pointers from registers and the stack — with the values the
// program wrote there.
func TestCopiesAtSamples(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "snapmem", []string{"snapmem.c"}, "-O2", "-g")
	tk, err := New(Options{Snapshots: true, Chase: true})
	testutil.Need(t, err == nil, fmt.Sprint("BPF snapshots: ", err))
	defer tk.Close()

	cmd := exec.Command(bin, "40000000")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var cfgAddr, aAddr, bAddr uint64
	if _, err := fmt.Fscanf(bufio.NewReader(out), "%v %v %v\n", &cfgAddr, &aAddr, &bAddr); err != nil {
		t.Fatalf("reading the target's addresses: %v", err)
	}
	pid := cmd.Process.Pid
	ev, ring := attached(t, tk, perf.Config{Frequency: 999, StackBytes: 512}, pid, 64)
	maps, err := proc.Maps(pid)
	if err != nil {
		t.Fatal(err)
	}
	var data [][2]uint64
	for _, m := range maps {
		if m.Perms[1] == 'w' && m.Path != "[stack]" {
			data = append(data, [2]uint64{m.Start, m.End})
		}
	}
	// Far more pieces than fit in one unrolled pass: 120 more one-byte
	// copies of cfg's first word, each read back.
	plan := &Plan{Abs: []Range{{Addr: cfgAddr, Len: 16, From: -1}, {Addr: 0, Len: 24, From: 0, PtrOff: 8}}, Data: data, Chase: true}
	const extra = 120
	for i := range extra {
		plan.Abs = append(plan.Abs, Range{Addr: cfgAddr + uint64(i%8), Len: 1, From: -1})
	}
	if err := tk.SetPlan(uint32(pid), plan); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("\n"))
	if err := cmd.Wait(); err != nil {
		t.Fatalf("target: %v", err)
	}

	// Every sample the ring holds has its snapshot, stamped with its time.
	stamped := stamps(t, tk)
	times := map[uint64]bool{}
	_, recs := ring.Peek(nil, nil)
	for _, raw := range recs {
		rec, err := perf.Decode(raw, ev.Layout)
		if err != nil {
			t.Fatal(err)
		}
		if smp, ok := rec.(*perf.Sample); ok && smp.TID == uint32(pid) {
			times[smp.Time] = true
		}
	}
	samples := len(times)
	var n, global, viaPlan, chased, pieces int
	err = tk.Drain(func(s *Snapshot) {
		if s.TID != uint32(pid) {
			return
		}
		n++
		delete(times, s.Stamp)
		b := make([]byte, 16)
		if s.Read(cfgAddr, b) == nil && binary.LittleEndian.Uint64(b) == 0x1234567 && binary.LittleEndian.Uint64(b[8:]) == aAddr {
			global++
		}
		if len(s.Chunks) > 1 && s.Chunks[1].Addr == aAddr && binary.LittleEndian.Uint64(s.Chunks[1].Data) == 0x1111aaaa {
			viaPlan++
		}
		if s.Read(bAddr, b) == nil && binary.LittleEndian.Uint64(b) == 0x2222bbbb {
			chased++
		}
		all := len(s.Chunks) >= 2+extra
		for i := 0; all && i < extra; i++ {
			c := s.Chunks[2+i]
			all = c.Addr == cfgAddr+uint64(i%8) && len(c.Data) == 1 && uint64(c.Data[0]) == uint64(0x1234567)>>(8*(i%8))&0xff
		}
		if all {
			pieces++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d snapshots: global %d, through the planned pointer %d, b by chasing %d", n, global, viaPlan, chased)
	if n < 20 {
		t.Fatalf("only %d snapshots of a CPU-bound run", n)
	}
	if stamped && (samples < 20 || len(times) > 0) {
		t.Errorf("%d of %d samples have no snapshot stamped with their time", len(times), samples)
	}
	if pieces != n {
		t.Errorf("%d more planned pieces copied in %d of %d snapshots; want all", extra, pieces, n)
	}
	if global != n || viaPlan != n {
		t.Errorf("planned copies: global in %d, *cfg.head in %d of %d snapshots; want all", global, viaPlan, n)
	}
	if chased < n*9/10 {
		t.Errorf("node b found by chasing in %d of %d snapshots; want ≥ 90%%", chased, n)
	}
}

// TestLoadTime logs what loading costs (bench/sampleprog.sh prints it); it
// asserts only that both variants load.
func TestLoadTime(t *testing.T) {
	testutil.NeedRoot(t)
	for _, o := range []Options{{Snapshots: true, Chase: true}, {Snapshots: true}, {Jitter: Jitter{Min: 8, Max: 12}}, {Stack: true}, {Stack: true, UserChain: true}} {
		t0 := time.Now()
		tk, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		info, _ := tk.prog.Info()
		n, _ := info.VerifiedInstructions()
		m := maps{}
		if o.UserChain {
			m.chain = userChain()
		}
		t.Logf("%+v: load %v, %d instructions, %d verified", o, d, len(program(m, o)), n)
		tk.Close()
	}
}

// TestStackCopies runs a real program (libc-heavy, without frame pointers)
// under a cpu-clock event that copies the user stack itself
// (PERF_SAMPLE_STACK_USER) with the program attached and copying it too,
// and compares the two at each sample: the program's copy starts at the
// same stack pointer and holds the same bytes. Without a top the program
// copies the full size; with the thread's top set (here from the first
// samples' stack pointers) it copies up to the top only, and says so.
// Until a size is set it copies nothing. With the top, the program walks
// the user chain too, into the same record: the chain is perf's and the
// copy still the same.
func TestStackCopies(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "libcalls-nofp", []string{"libcalls.c"}, "-O2", "-g", "-fomit-frame-pointer")
	for _, mode := range []string{"unset", "full", "top"} {
		withTop := mode == "top"
		// With the user chain walked (before the copy, in the same record).
		tk, err := New(Options{Stack: true, UserChain: mode == "top"})
		testutil.Need(t, err == nil, fmt.Sprint("BPF stack copies: ", err))
		stamped := stamps(t, tk)
		if mode != "unset" {
			if err := tk.SetStackBytes(8192); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bin, "1500")
		cmd.Stdout = nil
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := cmd.Process.Pid
		ev, err := perf.Open(perf.Config{Frequency: 999, StackBytes: 8192, UserRegs: perf.RegsUnwind, Disabled: true}, pid, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		ring, err := perf.MapRing(ev, 2048)
		if err != nil {
			t.Fatal(err)
		}
		if err := tk.Attach(ev.FD); err != nil {
			t.Fatal(err)
		}
		if err := ev.Enable(); err != nil {
			t.Fatal(err)
		}
		var samples []*perf.Sample
		read := func() { samples = append(samples, ringSamples(t, ev, ring, uint32(pid))...) }
		// With a top: the highest stack pointer of the first samples,
		// plus a little, set while the program runs on.
		var top, topSet uint64
		byTime := map[uint32][]*Snapshot{}
		drain := func() {
			if err := tk.Drain(func(s *Snapshot) {
				if s.IsStack {
					byTime[s.TID] = append(byTime[s.TID], s)
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		// Both rings are read while the program runs (a few hundred
		// 8 KiB samples, more on a busy machine).
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		for len(exited) == 0 {
			time.Sleep(5 * time.Millisecond)
			read()
			drain()
			if withTop && top == 0 && len(samples) >= 10 {
				for _, s := range samples {
					top = max(top, s.StackSP+200)
				}
				if err := tk.SetTop(uint32(pid), top); err != nil {
					t.Fatal(err)
				}
				var ts unix.Timespec
				unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				topSet = uint64(ts.Nano())
			}
		}
		if err := <-exited; err != nil {
			t.Fatalf("target: %v", err)
		}
		ev.Disable()
		read()
		drain()
		if withTop && top == 0 {
			t.Fatalf("%d samples before the program's end", len(samples))
		}
		if tk.Lost > 0 {
			t.Fatalf("the program's ring lost %d records", tk.Lost)
		}
		ring.Close()
		ev.Close()
		tk.Close()
		copies := byTime[uint32(pid)]
		// Drain reads the CPUs' rings one after the other.
		slices.SortFunc(copies, func(a, b *Snapshot) int { return cmp.Compare(a.Time, b.Time) })
		if mode == "unset" {
			if len(samples) < 20 || len(copies) != 0 {
				t.Fatalf("no size set: %d samples, %d stack copies; want 20 or more, none", len(samples), len(copies))
			}
			continue
		}
		if len(samples) < 20 || len(copies) != len(samples) {
			t.Fatalf("top %v: %d samples, %d stack copies; want 20 or more, one each", withTop, len(samples), len(copies))
		}
		sized, short, holes := 0, 0, 0
		for i, s := range samples {
			c := copies[i]
			d := int64(c.Time) - int64(s.Time)
			if d < -200000 || d > 200000 {
				for j := max(i-3, 0); j < min(i+3, len(samples)); j++ {
					t.Logf("%d: sample %d copy %d sp %x/%x len %d", j, samples[j].Time, copies[j].Time, samples[j].StackSP, copies[j].StackSP, len(copies[j].Stack))
				}
				t.Fatalf("sample %d at %d, its stack copy at %d", i, s.Time, c.Time)
			}
			if c.StackSP != s.StackSP {
				t.Fatalf("sample %d: the program copied from %#x, perf from %#x", i, c.StackSP, s.StackSP)
			}
			if stamped && c.Stamp != s.Time {
				t.Fatalf("sample %d at %d: its stack copy is stamped %d", i, s.Time, c.Stamp)
			}
			if user := c.User[:min(len(c.User), ChainMax-len(s.Kernel))]; withTop && (!c.Walked || fmt.Sprintf("%x", user) != fmt.Sprintf("%x", s.User)) {
				t.Fatalf("sample %d: the program's user chain (walked %v)\n%x\nperf's\n%x", i, c.Walked, c.User, s.User)
			}
			n := min(len(c.Stack), len(s.Stack))
			if string(c.Stack[:n]) != string(s.Stack[:n]) {
				t.Fatalf("sample %d: the copies differ in their first %d bytes", i, n)
			}
			if c.StackHoles != 0 {
				// A page not in memory (a frame just made, its pages not
				// yet written): perf's copy ends before it, the program's
				// goes on past it, the page zero.
				holes++
				checkHoles(t, i, c, len(s.Stack))
				continue
			}
			want := len(s.Stack)
			// A copy up to a top is sized when the top lies at most
			// MaxStack above the stack pointer, however far past the
			// full size.
			if up := (top - s.StackSP + 7) &^ 7; withTop && c.Time > topSet && top > s.StackSP && up <= MaxStack {
				want = int(up)
				if !c.Sized {
					t.Errorf("sample %d: %d bytes up to the top, not said to be", i, len(c.Stack))
				}
				sized++
			}
			if len(c.Stack) != want {
				t.Errorf("sample %d: the program copied %d bytes, want %d (perf %d, sp %#x, top %#x)", i, len(c.Stack), want, len(s.Stack), s.StackSP, top)
			}
			if len(c.Stack) < 8192 {
				short++
			}
		}
		t.Logf("top %v: %d samples, %d copies up to the top, %d shorter than 8 KiB, %d with holes", withTop, len(samples), sized, short, holes)
		if withTop && sized < (len(samples)-holes)/2 {
			t.Errorf("%d of %d copies ended at the top; want half or more", sized, len(samples))
		}
	}
}

// checkHoles checks a copy with pages that could not be read against
// perf's copy of perfLen bytes from the same stack pointer: perf's ends at
// the first hole (it stops at the first fault), the program's goes no
// shorter, holds zeros in its holes and ends with a page it read (a page
// past that end may be marked: it faulted and ended the copy).
func checkHoles(t *testing.T, i int, c *Snapshot, perfLen int) {
	t.Helper()
	first, last := -1, 0
	for p := 0; p < 8; p++ {
		lo := max(int((c.StackSP&^4095)+uint64(p)*4096)-int(c.StackSP), 0)
		hi := min(int((c.StackSP&^4095)+uint64(p+1)*4096)-int(c.StackSP), len(c.Stack))
		if c.StackHoles&(1<<p) != 0 && first < 0 {
			first = lo
		}
		if lo >= len(c.Stack) {
			// A page past the end that faulted (past the end of the
			// stack's mapping): the copy ended before it.
			continue
		}
		if c.StackHoles&(1<<p) == 0 {
			last = p
			continue
		}
		for _, b := range c.Stack[lo:hi] {
			if b != 0 {
				t.Errorf("sample %d: hole %d (bytes %d–%d) not zero", i, p, lo, hi)
				break
			}
		}
	}
	if perfLen > first || len(c.Stack) < perfLen {
		t.Errorf("sample %d: holes %08b, first at byte %d: perf copied %d bytes, the program %d", i, c.StackHoles, first, perfLen, len(c.Stack))
	}
	if end := int((c.StackSP&^4095)+uint64(last+1)*4096) - int(c.StackSP); c.StackHoles&(1<<last) != 0 || len(c.Stack) > end {
		t.Errorf("sample %d: holes %08b: the copy of %d bytes does not end with a page read", i, c.StackHoles, len(c.Stack))
	}
}

// TestUserChainAsPerf runs real programs under a cpu-clock event whose
// samples carry perf's user call chain (PERF_SAMPLE_CALLCHAIN) with the
// program attached, copying the stack and walking the user chain itself
// (Options.UserChain), and compares the two chains sample by sample: the
// program's walk, which stops before the read that faults at the chain's
// root, gives the kernel's chain. C with frame pointers (whose chains go
// from the sampled function to _start), without them (libc's frames and
// the program's own: the walk follows rbp wherever it leads, as the
// kernel's does), and threads.
func TestUserChainAsPerf(t *testing.T) {
	testutil.NeedRoot(t)
	type target struct {
		name, src string
		flags     []string
		args      []string
		deep      bool // every chain of the program's own frames reaches main's caller
	}
	for _, tg := range []target{
		{"deep-fp", "deep.c", []string{"-O2", "-g", "-fno-omit-frame-pointer"}, []string{"60"}, true},
		{"libcalls-fp", "libcalls.c", []string{"-O2", "-g", "-fno-omit-frame-pointer"}, []string{"1500"}, false},
		{"libcalls-nofp", "libcalls.c", []string{"-O2", "-g", "-fomit-frame-pointer"}, []string{"1500"}, false},
		{"libthreads-fp", "libthreads.c", []string{"-O2", "-g", "-fno-omit-frame-pointer", "-pthread"}, []string{"1500"}, false},
	} {
		t.Run(tg.name, func(t *testing.T) {
			bin := testutil.C(t, tg.name, []string{tg.src}, tg.flags...)
			tk, err := New(Options{Stack: true, UserChain: true})
			testutil.Need(t, err == nil, fmt.Sprint("BPF stack copies: ", err))
			defer tk.Close()
			testutil.Need(t, tk.WalksUser(), "the kernel's BTF places task_struct.mm (the program's user walk)")
			if err := tk.SetStackBytes(1024); err != nil {
				t.Fatal(err)
			}
			// The target waits for a line before its exec, so that its
			// threads inherit events the program is attached to.
			cmd := exec.Command("sh", append([]string{"-c", `read go && exec "$@"`, "sh", bin}, tg.args...)...)
			start, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			// Inherited events, for the threads: one per CPU (the kernel
			// maps no ring of an inherited event on every CPU).
			var evs []*perf.Event
			var rings []*perf.Ring
			for cpu := 0; cpu < runtime.NumCPU(); cpu++ {
				ev, err := perf.Open(perf.Config{Frequency: 999, UserRegs: perf.RegsUnwind, Disabled: true, Inherit: true, MaxStack: ChainMax}, pid, cpu, -1)
				if err != nil {
					t.Fatal(err)
				}
				defer ev.Close()
				ring, err := perf.MapRing(ev, 512)
				if err != nil {
					t.Fatal(err)
				}
				defer ring.Close()
				if err := tk.Attach(ev.FD); err != nil {
					t.Fatal(err)
				}
				evs, rings = append(evs, ev), append(rings, ring)
			}
			for _, ev := range evs {
				if err := ev.Enable(); err != nil {
					t.Fatal(err)
				}
			}
			samples := map[uint32][]*perf.Sample{}
			copies := map[uint32][]*Snapshot{}
			read := func() {
				for _, ring := range rings {
					_, recs := ring.Peek(nil, nil)
					for _, raw := range recs {
						rec, err := perf.Decode(append([]byte(nil), raw...), perf.Layout{Regs: perf.RegsUnwind})
						if err != nil {
							t.Fatal(err)
						}
						if s, ok := rec.(*perf.Sample); ok && s.PID == uint32(pid) {
							samples[s.TID] = append(samples[s.TID], s)
						}
						if l, ok := rec.(*perf.Lost); ok {
							t.Fatalf("perf's ring lost %d records", l.Count)
						}
					}
					ring.Release()
				}
			}
			drain := func() {
				if err := tk.Drain(func(s *Snapshot) {
					if s.IsStack {
						copies[s.TID] = append(copies[s.TID], s)
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := start.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			for len(exited) == 0 {
				time.Sleep(5 * time.Millisecond)
				read()
				drain()
			}
			if err := <-exited; err != nil {
				t.Fatalf("target: %v", err)
			}
			for _, ev := range evs {
				ev.Disable()
			}
			read()
			drain()
			if tk.Lost > 0 {
				t.Fatalf("the program's ring lost %d records", tk.Lost)
			}
			n, deep, kernel := 0, 0, 0
			for tid, ss := range samples {
				cs := copies[tid]
				// The rings are read one CPU after the other.
				slices.SortFunc(ss, func(a, b *perf.Sample) int { return cmp.Compare(a.Time, b.Time) })
				slices.SortFunc(cs, func(a, b *Snapshot) int { return cmp.Compare(a.Time, b.Time) })
				if len(cs) != len(ss) {
					t.Fatalf("thread %d: %d samples, %d stack records; want one each", tid, len(ss), len(cs))
				}
				for i, s := range ss {
					c := cs[i]
					if !c.Walked {
						t.Fatalf("thread %d sample %d: the program did not walk the chain", tid, i)
					}
					// perf's chain, kernel and user, holds ChainMax
					// addresses at most.
					user := c.User[:min(len(c.User), ChainMax-len(s.Kernel))]
					if fmt.Sprintf("%x", user) != fmt.Sprintf("%x", s.User) {
						t.Fatalf("thread %d sample %d (user mode %v): the program's chain\n%x\nperf's\n%x", tid, i, s.UserMode, c.User, s.User)
					}
					n++
					if len(c.User) >= 4 {
						deep++
					}
					if !s.UserMode {
						kernel++
					}
				}
			}
			t.Logf("%d samples in %d threads, %d chains of 4 addresses or more, %d taken in the kernel", n, len(samples), deep, kernel)
			if n < 20 {
				t.Fatalf("only %d samples", n)
			}
			if tg.deep && deep < n*9/10 {
				t.Errorf("%d of %d chains of 4 addresses or more; want 90%% (the program keeps frame pointers)", deep, n)
			}
			if strings.HasPrefix(tg.name, "libthreads") && len(samples) < 3 {
				t.Errorf("samples of %d threads; want main's and the two threads'", len(samples))
			}
		})
	}
}

// stamps says whether the program stamps its records with their sample's
// time: wherever the kernel prepares the sample before it runs the program
// (Linux 6.3 on), which then must.
func stamps(t *testing.T, tk *Taker) bool {
	t.Helper()
	rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	if _, err := fmt.Sscanf(string(rel), "%d.%d", &major, &minor); err != nil {
		t.Fatalf("kernel release %q: %v", rel, err)
	}
	if major < 6 || major == 6 && minor < 3 {
		return false
	}
	if !tk.Stamps() {
		t.Fatalf("Linux %d.%d prepares the sample before the program, which does not read its stamp", major, minor)
	}
	return true
}

// TestStackKnownHoles samples a thread that spends its time below a
// frame whose middle pages were never written (testdata's holeframe, as
// memcached's transmit) with its top set above that frame: each copy
// runs through the holes, and a copy at an SP whose last copy met holes
// takes them as known without reading them (knownHoles), but for one in
// knownRead, which reads every page again. Every copy with holes holds
// zeros in them, the bytes perf copied before the first hole, and ends
// with a page it read: the outer frames beyond the holes.
func TestStackKnownHoles(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "holeframe", []string{"holeframe.c"}, "-O2", "-g", "-fomit-frame-pointer", "-pthread")
	tk, err := New(Options{Stack: true})
	testutil.Need(t, err == nil, fmt.Sprint("BPF stack copies: ", err))
	defer tk.Close()
	if err := tk.SetStackBytes(8192); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "3000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	pid := cmd.Process.Pid
	// The worker: the process's second thread.
	var worker int
	for deadline := time.Now().Add(5 * time.Second); worker == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil && tid != pid {
				worker = tid
			}
		}
	}
	if worker == 0 {
		t.Fatal("holeframe's worker thread did not start")
	}
	ev, ring := attached(t, tk, perf.Config{Frequency: 999, StackBytes: 8192, UserRegs: perf.RegsUnwind, Disabled: true}, worker, 2048)
	if err := ev.Enable(); err != nil {
		t.Fatal(err)
	}
	var samples []*perf.Sample
	var copies []*Snapshot
	read := func() {
		samples = append(samples, ringSamples(t, ev, ring, uint32(worker))...)
		if err := tk.Drain(func(s *Snapshot) {
			if s.IsStack {
				copies = append(copies, s)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The top: 18 KiB above the first samples' highest SP, past
	// transmit's 16 KiB frame, within the stack's mapping.
	var top uint64
	for len(exited) == 0 && len(samples) < 1500 {
		time.Sleep(5 * time.Millisecond)
		read()
		if top == 0 && len(samples) >= 10 {
			for _, s := range samples {
				top = max(top, s.StackSP+18<<10)
			}
			if err := tk.SetTop(uint32(worker), top); err != nil {
				t.Fatal(err)
			}
		}
	}
	ev.Disable()
	read()
	if len(copies) != len(samples) {
		t.Fatalf("%d samples, %d stack copies: want one each", len(samples), len(copies))
	}
	slices.SortFunc(copies, func(a, b *Snapshot) int { return cmp.Compare(a.Time, b.Time) })
	holes, known, reread := 0, 0, 0
	knownAt := map[uint64]bool{} // SPs whose copies took holes as known
	for i, s := range samples {
		c := copies[i]
		if c.StackSP != s.StackSP {
			t.Fatalf("sample %d: the program copied from %#x, perf from %#x", i, c.StackSP, s.StackSP)
		}
		n := min(len(c.Stack), len(s.Stack))
		if string(c.Stack[:n]) != string(s.Stack[:n]) {
			t.Fatalf("sample %d: the copies differ in their first %d bytes", i, n)
		}
		if c.StackHoles == 0 {
			if c.KnownHoles {
				t.Errorf("sample %d: no holes, but taken as known", i)
			}
			continue
		}
		holes++
		checkHoles(t, i, c, len(s.Stack))
		if c.KnownHoles {
			known++
			knownAt[c.StackSP] = true
		} else if knownAt[c.StackSP] {
			reread++
		}
		// The outer frames, beyond the holes, were read.
		last := c.Stack[len(c.Stack)-min(len(c.Stack), 4096):]
		if strings.Trim(string(last), "\x00") == "" {
			t.Errorf("sample %d: holes %08b, known %v: the copy's last page is all zero", i, c.StackHoles, c.KnownHoles)
		}
	}
	t.Logf("%d samples, %d copies with holes, %d of them taken as known, %d read again at an SP taken as known before", len(samples), holes, known, reread)
	if holes < 100 || known < holes/2 {
		t.Errorf("%d copies with holes, %d taken as known: want 100 or more, half of them known", holes, known)
	}
	if known >= 2*knownRead && reread == 0 {
		t.Errorf("%d copies took holes as known, none read them again at such an SP: want one in %d", known, knownRead)
	}
}

// attached opens a sampling event of cfg on thread tid with a ring of
// pages, the program attached to it; both are closed at the test's end.
func attached(t *testing.T, tk *Taker, cfg perf.Config, tid, pages int) (*perf.Event, *perf.Ring) {
	t.Helper()
	ev, err := perf.Open(cfg, tid, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	ring, err := perf.MapRing(ev, pages)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ring.Close() })
	if err := tk.Attach(ev.FD); err != nil {
		t.Fatal(err)
	}
	return ev, ring
}

// ringSamples returns the samples of thread tid that ring holds, decoded
// from copies (they are kept after the ring's space is released), and
// releases the ring's space; a lost record fails the test.
func ringSamples(t *testing.T, ev *perf.Event, ring *perf.Ring, tid uint32) []*perf.Sample {
	t.Helper()
	_, recs := ring.Peek(nil, nil)
	defer ring.Release()
	var samples []*perf.Sample
	for _, raw := range recs {
		rec, err := perf.Decode(append([]byte(nil), raw...), ev.Layout)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := rec.(*perf.Sample); ok && s.TID == tid {
			samples = append(samples, s)
		}
		if l, ok := rec.(*perf.Lost); ok {
			t.Fatalf("perf's ring lost %d records", l.Count)
		}
	}
	return samples
}
