package e2e

import (
	"os/exec"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestPerCPUClock: by default CPU time comes from one cpu-clock event per
// CPU, whose samples a BPF program keeps for the recorded process tree
// only. A multi-threaded program exec'd by a forked child of the command,
// recorded while another copy of the same program spins beside it on the
// same CPUs: every sample belongs to a process of the tree (the processes
// the recording's fork and comm records name), none to the other copy;
// each thread and each process of the tree is sampled; nothing is lost.
// Run as root, the per-CPU events must be the ones used (the recording
// says which).
func TestPerCPUClock(t *testing.T) {
	testutil.NeedRoot(t)
	fe := testutil.C(t, "forkexec", []string{"forkexec.c"}, "-O2", "-g")
	thr := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	other := exec.Command(thr, "100000000000")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	for _, mode := range [][]string{{}, {"--values"}, {"--events", "cpu,syscalls,sched"}} {
		out := rec(t)
		args := append(append([]string{"record", "-o", out}, mode...), "--", fe, thr, "150000000")
		_, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("record %v: exit %d\n%s", mode, code, stderr)
		}
		tree := map[uint32]bool{}
		samples := map[uint32]map[uint32]int{} // by PID, by TID
		var end *recording.End
		var lost uint64
		perCPU := false
		eachRecord(t, out, func(rec recording.Record) {
			switch x := rec.(type) {
			case *recording.Meta:
				perCPU = x.Extra["cpu_clock"] == "per-cpu"
			case *recording.Comm:
				tree[x.PID] = true
			case *recording.Task:
				tree[x.PID] = true
			case *recording.Lost:
				lost += x.Count
			case *recording.End:
				end = x
			case *recording.Sample:
				if x.Event != recording.EventCPU {
					return
				}
				if samples[x.PID] == nil {
					samples[x.PID] = map[uint32]int{}
				}
				samples[x.PID][x.TID]++
			}
		})
		if !perCPU {
			t.Errorf("record %v: the recording does not say its CPU time came from per-CPU events", mode)
		}
		if end == nil || end.Lost != 0 || lost != 0 {
			t.Errorf("record %v: lost %d (end record %+v), want none", mode, lost, end)
		}
		threads := 0
		for pid, tids := range samples {
			if !tree[pid] {
				t.Errorf("record %v: %d samples of process %d, which is not in the recorded tree %v", mode, len(tids), pid, tree)
			}
			if pid == uint32(other.Process.Pid) {
				t.Errorf("record %v: samples of the other process %d", mode, pid)
			}
			threads += len(tids)
		}
		// The parent, the child (which becomes the threaded program) and
		// its two threads.
		if len(samples) != 2 || threads != 4 {
			t.Errorf("record %v: samples of %d processes and %d threads, want 2 and 4: %v", mode, len(samples), threads, samples)
		}
		f := flat(t, out)
		for _, fn := range []string{"parent_spin", "child_spin", "spin_a", "spin_b", "spin_c"} {
			if f.total(fn) == 0 {
				t.Errorf("record %v: no sample in %s: %+v", mode, fn, f.Entries)
			}
		}
	}
}
