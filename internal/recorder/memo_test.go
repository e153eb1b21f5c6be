package recorder

import (
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/testutil"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// TestEventChainsMemoized records holeframe (a thread without frame
// pointers making writev from under a 16 KiB frame, as memcached's
// transmit) with system calls and switches: once an entry's copy unwound
// complete, the thread's entries there reuse its chain (a memo), one in
// 64 still comes with its copy, and each of those that holds the memo's
// words unwinds to the memo's chain.
func TestEventChainsMemoized(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "holeframe", []string{"holeframe.c"}, "-O2", "-g", "-fomit-frame-pointer", "-pthread")
	out := filepath.Join(t.TempDir(), "holeframe.culprit")
	res, err := Launch(Options{Output: out, Events: []string{"cpu", "syscalls", "sched"}}, []string{bin, "6000"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples, %d chains from memos, %d checked, %d differed; warnings %q", res.Samples, res.MemoChains, res.MemoChecked, res.MemoMismatched, res.Warnings)
	if res.MemoChains < 3000 || res.MemoChecked < 10 || res.MemoMismatched != 0 || res.Lost != 0 {
		t.Errorf("%d chains from memos, %d checked against their memo, %d differed, %d lost: want 3000 or more from memos (of 6000 writev entries), 10 or more checked, none differing, none lost",
			res.MemoChains, res.MemoChecked, res.MemoMismatched, res.Lost)
	}
}

// TestCPUSampleChainsMemoized records syscalls.c (-O2, no frame
// pointers: write(2) to /dev/null in a loop for a second, hundreds of
// samples however fast the machine's system calls are) with CPU samples
// alone: the samples taken in the kernel have the user registers of the
// call, the same each time, and after the first one's complete unwind
// they reuse its chain; those checked agree with it, and every sample in
// write_many reaches main.
func TestCPUSampleChainsMemoized(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g", "-fomit-frame-pointer")
	out := filepath.Join(t.TempDir(), "syscalls.culprit")
	res, err := Launch(Options{Output: out}, []string{bin, "1s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d samples, %d chains from memos, %d checked, %d differed; warnings %q", res.Samples, res.MemoChains, res.MemoChecked, res.MemoMismatched, res.Warnings)
	if res.MemoChains < res.Samples/5 || res.MemoChecked < 2 || res.MemoMismatched != 0 || res.Lost != 0 {
		t.Errorf("of %d samples, %d chains from memos, %d checked against their memo, %d differed, %d lost: want a fifth or more from memos, 2 or more checked, none differing, none lost",
			res.Samples, res.MemoChains, res.MemoChecked, res.MemoMismatched, res.Lost)
	}
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, reach := 0, 0
	for _, s := range p.Samples {
		w, m := false, false
		for _, fi := range p.Stacks[s.Stack] {
			switch p.Frames[fi].Function {
			case "write_many":
				w = true
			case "main":
				m = true
			}
		}
		if w {
			in++
			if m {
				reach++
			}
		}
	}
	if in < 200 || reach < in*99/100 {
		t.Errorf("%d of %d samples in write_many reach main, want ≥ 99%% of 200 or more", reach, in)
	}
}

// TestMemoRoomForPlacesThatRepeat: a thread whose memos are all taken
// by places seen once gives a place that repeats the room of the one
// used least, from its second refusal on; a place seen once is refused,
// and a memo in use keeps its room against a place refused fewer times
// than it was used. The chains of memos given up stay readable for the
// records still in flight.
func TestMemoRoomForPlacesThatRepeat(t *testing.T) {
	testutil.NeedRoot(t)
	ms, err := bpfasm.NewMemos()
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	s := &session{memos: newMemos(ms)}
	m := s.memos
	const tid, sp = 4242, 0x7ffe0000
	learn := func(ip uint64) {
		deps := unwind.Deps{Words: []unwind.Word{{Addr: sp + 8, Val: ip + 1}}}
		s.learnMemo(tid, ip, sp, 0, nil, []uint64{ip, 0x401000}, &deps)
	}
	for i := range uint64(memosPerThread) {
		learn(0x1000 + i)
	}
	id := func(ip uint64) uint32 {
		if e := m.byKey[memoKey{tid, ip, sp}]; e != nil {
			return e.id
		}
		return 0
	}
	// The first place used often, the others never.
	hot := id(0x1000)
	for range 5 {
		if _, ok := m.chain(hot); !ok {
			t.Fatal("no chain for the memo in use")
		}
	}
	cold := id(0x1001)
	learn(0x9000)
	if id(0x9000) != 0 || m.stats.evicted != 0 {
		t.Fatalf("a place refused once took a memo's room")
	}
	learn(0x9000)
	if id(0x9000) == 0 || m.stats.evicted != 1 || len(m.perThread[tid]) != memosPerThread {
		t.Fatalf("a place refused twice: memo %d, %d evicted, %d memos; want a memo, one evicted, %d memos",
			id(0x9000), m.stats.evicted, len(m.perThread[tid]), memosPerThread)
	}
	if id(0x1000) != hot {
		t.Errorf("the memo in use was evicted")
	}
	if id(0x1001) != 0 {
		t.Errorf("an unused memo was kept where another was evicted")
	}
	if c, ok := m.chain(cold); !ok || c[0] != 0x1001 {
		t.Errorf("the evicted memo's chain is gone for the records in flight: %v %v", c, ok)
	}
	// Evict every unused memo; then a new place does not take the room
	// of the memo used five times until it was refused more often.
	for i := range uint64(memosPerThread - 1) {
		learn(0xa000 + i)
		learn(0xa000 + i)
	}
	for i := range uint64(memosPerThread - 1) {
		for range 6 {
			m.chain(id(0xa000 + i))
		}
	}
	for n := 1; n <= 5; n++ {
		learn(0xb000)
		if id(0xb000) != 0 {
			t.Fatalf("a place refused %d times took the room of a memo used 5 times", n)
		}
	}
	learn(0xb000)
	if id(0xb000) == 0 || id(0x1000) != 0 {
		t.Errorf("a place refused 6 times did not take the room of the memo used 5 times")
	}
}
