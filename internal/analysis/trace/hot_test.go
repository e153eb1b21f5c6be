package trace

import (
	"math"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// A sample counts for the innermost frame of the executable (the C
// library's and the kernel's frames below it are its callees' time),
// only under root, inlined frames charged to their function, clone
// suffixes removed.
func TestSampledShares(t *testing.T) {
	p := &profile.Profile{
		Frames: []profile.Frame{
			{Function: "main", Object: "/bin/prog"},                  // 0
			{Function: "work.isra.0", Object: "/bin/prog"},           // 1
			{Function: "memcpy", Object: "/lib/libc.so.6"},           // 2
			{Function: "do_page_fault", Kernel: true},                // 3
			{Function: "helper", Object: "/bin/prog", Inlined: true}, // 4
			{Function: "_start", Object: "/bin/prog"},                // 5
			{Function: "_dl_relocate", Object: "/lib/ld.so"},         // 6
			{Function: "work", Object: "/other/prog2"},               // 7: another program
		},
		Stacks: [][]int32{
			{3, 2, 1, 0, 5}, // kernel under memcpy under work: work
			{1, 0, 5},       // work
			{4, 1, 0, 5},    // helper inlined into work: work
			{0, 5},          // main
			{6, 5},          // the loader before main: not counted
			{2, 7},          // another object only: not counted
		},
	}
	for st, n := range []int{3, 1, 2, 4, 5, 7} {
		for range n {
			p.Samples = append(p.Samples, profile.Sample{Stack: int32(st), Event: recording.EventCPU})
		}
	}
	p.Samples = append(p.Samples, profile.Sample{Stack: 1, Event: recording.EventSyscallEnter}) // not CPU time
	got, n := SampledShares(p, "/elsewhere/prog", "main")
	if n != 10 {
		t.Fatalf("%d samples counted, want 10 (those under main)", n)
	}
	if len(got) != 2 || math.Abs(got["work"].Share-0.6) > 1e-9 || math.Abs(got["main"].Share-0.4) > 1e-9 {
		t.Errorf("shares %v, want work 0.6 and main 0.4", got)
	}
	if want := profile.Err(6, 10); got["work"].Err != want {
		t.Errorf("work's error %g, want %g", got["work"].Err, want)
	}
	if _, n := SampledShares(p, "/bin/prog", ""); n != 15 {
		t.Errorf("without a root: %d samples counted, want 15 (the loader's under _start too)", n)
	}
}
