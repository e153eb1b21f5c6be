package recorder

import (
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/testutil"
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
