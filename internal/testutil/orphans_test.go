package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// The build directory of a test binary that is gone (killed, or ended by
// -timeout) is removed by the next one; a live binary's is kept.
func TestRemoveOrphans(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", targetsPrefix, cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dead)
	live, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", targetsPrefix, os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	removeOrphans()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s of an exited process is left: %v", dead, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s of this process is removed: %v", live, err)
	}
}
