package recorder

import (
	"path/filepath"
	"testing"

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
