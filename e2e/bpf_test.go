package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// culpritPrograms lists the BPF programs loaded in the kernel by the
// culprit process pid (they are named culprit_PID).
func culpritPrograms(t *testing.T, pid int) []string {
	t.Helper()
	var names []string
	id := ebpf.ProgramID(0)
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			return names
		}
		if err != nil {
			t.Fatalf("listing BPF programs: %v", err)
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		if info, err := p.Info(); err == nil && info.Name == "culprit_"+strconv.Itoa(pid) {
			names = append(names, info.Name)
		}
		p.Close()
	}
}

// Profiling leaves no BPF program or map behind: not after a normal end,
// not after the recorder is killed with SIGKILL while its target runs on.
func TestNoBPFLeftBehind(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "jobs", []string{"jobs.c"}, "-O2", "-g")
	loaded := func(pid int) func() bool {
		return func() bool {
			if !alive(pid) {
				t.Fatalf("culprit (%d) ended before its BPF program was seen", pid)
			}
			// The sampling program, and the fork program of the
			// followed processes' set.
			return len(culpritPrograms(t, pid)) >= 1
		}
	}
	cmd := exec.Command(culprit, "record", "--jitter", "20", "--expr", "jobs*@process@cfg.limits[2]", "-o", rec(t), "--", bin, "300", "heap")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Loaded before the command starts, unloaded after it ends (300
	// rounds: about a second of CPU time).
	waitFor(t, "culprit's BPF program while recording", loaded(cmd.Process.Pid))
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	noLoss(t, "", cmd.Args[1:])
	if p := culpritPrograms(t, cmd.Process.Pid); len(p) != 0 {
		t.Errorf("after a recording: %v still loaded", p)
	}

	target := exec.Command(bin, "100000", "heap")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	cmd = exec.Command(culprit, "record", "-p", strconv.Itoa(target.Process.Pid), "--jitter", "20", "--expr", "jobs*@process@j->size", "-o", rec(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	waitFor(t, "culprit's BPF program while attached", loaded(pid))
	waitSampling(t, pid, 1)
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	// The kernel frees the program after the last event closes.
	waitFor(t, "the kernel to free the program of a killed recorder", func() bool { return len(culpritPrograms(t, pid)) == 0 })
	// The target runs on: it is neither gone nor a zombie, and its CPU time
	// grows.
	if !alive(target.Process.Pid) {
		t.Fatalf("the target ended with the recorder")
	}
	waitCPU(t, target.Process.Pid, 20*time.Millisecond)

	// With system call windows the system call programs are attached and
	// detached at each window's edge: killed in that cycle, the recorder
	// leaves none of them (nor the switch program) attached.
	cmd = exec.Command(culprit, "record", "-p", strconv.Itoa(target.Process.Pid), "--events", "cpu,syscalls,sched",
		"--syscall-windows", "2ms/20ms", "-o", rec(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pid = cmd.Process.Pid
	// The sampling, fork, sys_enter, sys_exit and sched_switch programs.
	waitFor(t, "culprit's system call programs while attached", func() bool {
		if !alive(pid) {
			t.Fatalf("culprit (%d) ended before its BPF programs were seen", pid)
		}
		return len(culpritPrograms(t, pid)) >= 5
	})
	waitSampling(t, pid, 1)
	time.Sleep(100 * time.Millisecond) // a few windows' edges
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	waitFor(t, "the kernel to free the system call programs of a killed recorder", func() bool { return len(culpritPrograms(t, pid)) == 0 })
	if !alive(target.Process.Pid) {
		t.Fatalf("the target ended with the recorder")
	}
}
