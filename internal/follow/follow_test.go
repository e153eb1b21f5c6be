package follow

import (
	"os"
	"os/exec"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A followed process's children are followed from their fork, before they
// run, until they exit; other processes are not; Remove forgets one. The
// generation grows at each change: Add, a followed child's exit, Remove.
func TestForkFollowed(t *testing.T) {
	testutil.NeedRoot(t)
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := exec.Command("true")
	if err := before.Run(); err != nil {
		t.Fatal(err)
	}
	if s.Has(uint32(before.Process.Pid)) {
		t.Errorf("child %d of a process not followed is in the set", before.Process.Pid)
	}
	gen := func() uint64 {
		m, err := ebpf.NewMapFromFD(s.GenFD())
		if err != nil {
			t.Fatal(err)
		}
		var v uint64
		if err := m.Lookup(uint32(0), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	g0 := gen()
	self := uint32(os.Getpid())
	if err := s.Add(self); err != nil {
		t.Fatal(err)
	}
	g1 := gen()
	if g0 == 0 || g1 <= g0 {
		t.Errorf("generation %d before Add, %d after: want a non-zero one that grows", g0, g1)
	}
	// A child that waits on its standard input: in the set while it runs.
	child := exec.Command("cat")
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	followed := s.Has(uint32(child.Process.Pid))
	in.Close()
	child.Wait()
	if !followed {
		t.Errorf("child %d of a followed process is not in the set", child.Process.Pid)
	}
	// Its exit took it out, before its pid was free for another process.
	if s.Has(uint32(child.Process.Pid)) {
		t.Errorf("child %d still in the set after it exited", child.Process.Pid)
	}
	g2 := gen()
	if g2 <= g1 {
		t.Errorf("generation %d after a followed child's exit, %d before: want it grown", g2, g1)
	}
	s.Remove(self)
	if s.Has(self) {
		t.Errorf("%d still in the set after Remove", self)
	}
	if g3 := gen(); g3 <= g2 {
		t.Errorf("generation %d after Remove, %d before: want it grown", g3, g2)
	}
}
