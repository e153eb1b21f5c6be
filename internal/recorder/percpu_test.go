package recorder

import (
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// An ended process keeps its address space to the end of the drain after
// the one that saw it end: samples its other threads took before the end
// can still come, and need its mappings to be unwound.
func TestEndedProcessKeepsItsSpaceOneDrain(t *testing.T) {
	s := &session{spaces: map[uint32]*proc.Space{7: {}, 8: {}}}
	s.drains = 1
	s.endProcess(7)
	s.dropEnded() // the end of the drain that saw the exit
	if s.spaces[7] == nil {
		t.Fatal("the space went at the end of the drain that saw the exit")
	}
	s.drains = 2
	s.endProcess(7) // a later exit record of the same process changes nothing
	s.dropEnded()
	if s.spaces[7] != nil || s.spaces[8] == nil || len(s.ended) != 0 {
		t.Errorf("after the next drain: spaces %v, ended %v; want only 8's space left", s.spaces, s.ended)
	}
}

// With the CPUs' dummy events, the records of a process are kept when it
// is followed: the target, and each process a followed one forks, from
// its fork record on, until its address space goes.
func TestKeepFollowsForks(t *testing.T) {
	s := &session{sidebandCPU: true, spaces: map[uint32]*proc.Space{}}
	if err := s.followProcess(7); err != nil {
		t.Fatal(err)
	}
	fork := func(pid, ppid uint32) *perf.Task {
		return &perf.Task{Header: perf.Header{Type: perf.RecordFork, PID: pid, TID: pid}, PPID: ppid, PTID: ppid}
	}
	steps := []struct {
		rec  any
		want bool
	}{
		{&perf.Mmap{Header: perf.Header{PID: 9}}, false},
		{&perf.Comm{Header: perf.Header{PID: 7, TID: 7}}, true},
		{fork(7, 7), true},   // a thread of the target
		{fork(10, 8), false}, // a process another forks
		{fork(9, 7), true},   // a child of the target
		{&perf.Mmap{Header: perf.Header{PID: 9}}, true},
		{&perf.Comm{Header: perf.Header{PID: 10, TID: 10}}, false},
		{fork(11, 9), true}, // a grandchild
		{&perf.Task{Header: perf.Header{Type: perf.RecordExit, PID: 11, TID: 11}, PPID: 9}, true},
	}
	for i, st := range steps {
		if got := s.keep(st.rec); got != st.want {
			t.Errorf("step %d, %#v: kept %v, want %v", i, st.rec, got, st.want)
		}
	}
	s.drains = 1
	s.endProcess(9)
	s.dropEnded()
	if !s.keep(&perf.Mmap{Header: perf.Header{PID: 9}}) {
		t.Error("an ended process's records were left out in the drain that saw its end")
	}
	s.drains = 2
	s.dropEnded()
	if s.keep(&perf.Mmap{Header: perf.Header{PID: 9}}) {
		t.Error("the records of a pid whose process ended two drains ago are kept")
	}
	if !s.keep(fork(9, 7)) || !s.keep(&perf.Mmap{Header: perf.Header{PID: 9}}) {
		t.Error("a new child of the target given an ended process's pid is not followed")
	}
}

// A recording on the CPUs' dummy events holds the mappings, names, forks
// and exits of the target's processes only, however many processes the
// machine starts meanwhile; the target's forked and exec'd child is
// among them.
func TestRecordsOfOtherProcessesLeftOut(t *testing.T) {
	testutil.NeedRoot(t)
	fe := testutil.C(t, "forkexec", []string{"forkexec.c"}, "-O2", "-g")
	out := filepath.Join(t.TempDir(), "forkexec.culprit")
	stop := make(chan struct{})
	started := make(chan int)
	go func() {
		n := 0
		defer func() { started <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if exec.Command("/bin/true").Run() == nil {
				n++
			}
		}
	}()
	res, err := Launch(Options{Output: out}, []string{fe, "/bin/true"})
	close(stop)
	others := <-started
	if err != nil {
		t.Fatal(err)
	}
	if others < 5 {
		t.Fatalf("only %d other processes started during the recording: the test needs more", others)
	}
	r, err := recording.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var root uint32
	tree := map[uint32]bool{}
	execs := 0
	check := func(what string, pid uint32) {
		if root == 0 {
			root = pid
			tree[pid] = true
		}
		if !tree[pid] {
			t.Errorf("a %s record of process %d, which is not the target's (%d) nor one it forked", what, pid, root)
		}
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch x := rec.(type) {
		case *recording.Mmap:
			check("mmap", x.PID)
		case *recording.Comm:
			check("comm", x.PID)
			if x.Exec && x.PID != root {
				execs++
			}
		case *recording.Task:
			if !x.Exit && tree[x.PPID] {
				tree[x.PID] = true
			}
			check("task", x.PID)
		}
	}
	t.Logf("%d samples, %d processes in the target's tree, %d other processes started meanwhile", res.Samples, len(tree), others)
	if len(tree) != 2 || execs != 1 {
		t.Errorf("%d processes in the target's tree and %d execs of its child recorded, want forkexec and its child, which execs /bin/true", len(tree), execs)
	}
}

// TestOtherToolsRecordsIntact: perf recording a program of its own while
// culprit records another one reads back what it wrote. The CPUs' events
// see every mapping of the machine; asked for build-ids there, the kernel
// marked perf's MMAP2 records of the same mappings as carrying one, and
// perf aborted reading them.
func TestOtherToolsRecordsIntact(t *testing.T) {
	testutil.NeedRoot(t)
	_, err := exec.LookPath("perf")
	testutil.Need(t, err == nil, "needs the perf tool")
	hier := testutil.C(t, "hier", []string{"hier.c"}, "-O0", "-g", "-fno-omit-frame-pointer")
	dir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := Launch(Options{Output: filepath.Join(dir, "sleep.culprit")}, []string{"sleep", "3"})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the recorder's events open
	data := filepath.Join(dir, "perf.data")
	if out, err := exec.Command("perf", "record", "-q", "-N", "-B", "-o", data, "-e", "cpu-clock", "-g", "--", hier, "2").CombinedOutput(); err != nil {
		t.Fatalf("perf record beside culprit: %v\n%s", err, out)
	}
	if out, err := exec.Command("perf", "script", "-i", data).CombinedOutput(); err != nil {
		t.Errorf("perf script of what perf recorded beside culprit: %v\n%s", err, lastLines(string(out), 5))
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
