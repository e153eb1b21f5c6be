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
	cmd := exec.Command(culprit, "record", "--jitter", "20", "--expr", "jobs*@process@cfg.limits[2]", "-o", rec(t), "--", bin, "300", "heap")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if p := culpritPrograms(t, cmd.Process.Pid); len(p) != 1 {
		t.Errorf("while recording: %v loaded, want culprit's one program", p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if p := culpritPrograms(t, cmd.Process.Pid); len(p) != 0 {
		t.Errorf("after a recording: %v still loaded", p)
	}

	target := exec.Command(bin, "400", "heap")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer target.Process.Kill()
	cmd = exec.Command(culprit, "record", "-p", strconv.Itoa(target.Process.Pid), "--jitter", "20", "--expr", "jobs*@process@j->size", "-o", rec(t))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond)
	pid := cmd.Process.Pid
	if p := culpritPrograms(t, pid); len(p) != 1 {
		t.Errorf("while attached: %v loaded, want culprit's one program", p)
	}
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	deadline := time.Now().Add(2 * time.Second)
	for len(culpritPrograms(t, pid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the kernel frees the program after the last event closes
	}
	if p := culpritPrograms(t, pid); len(p) != 0 {
		t.Errorf("after SIGKILL of the recorder: %v still loaded", p)
	}
	if target.ProcessState != nil {
		t.Errorf("the target ended with the recorder")
	}
}
