package sampleprog

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os/exec"
	"testing"
	"time"

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
	ev, err := perf.Open(perf.Config{Frequency: 999, StackBytes: 512}, pid, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	ring, err := perf.MapRing(ev, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	if err := tk.Attach(ev.FD); err != nil {
		t.Fatal(err)
	}
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

	var n, global, viaPlan, chased, pieces int
	err = tk.Drain(func(s *Snapshot) {
		if s.TID != uint32(pid) {
			return
		}
		n++
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
	for _, o := range []Options{{Snapshots: true, Chase: true}, {Snapshots: true}, {Jitter: Jitter{Min: 8, Max: 12}}} {
		t0 := time.Now()
		tk, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		info, _ := tk.prog.Info()
		n, _ := info.VerifiedInstructions()
		t.Logf("%+v: load %v, %d instructions, %d verified", o, d, len(program(maps{}, o)), n)
		tk.Close()
	}
}
