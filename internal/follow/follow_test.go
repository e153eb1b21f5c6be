package follow

import (
	"os"
	"os/exec"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A followed process's children are followed from their fork, before they
// run, until they exit; other processes are not; Remove forgets one.
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
	self := uint32(os.Getpid())
	if err := s.Add(self); err != nil {
		t.Fatal(err)
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
	s.Remove(self)
	if s.Has(self) {
		t.Errorf("%d still in the set after Remove", self)
	}
}
