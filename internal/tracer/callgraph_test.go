package tracer

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// main's tail call hands its frame to run: a stack sampled in run holds
// run where main would be. work, called (not jumped to) by run, does not.
func TestStackRoots(t *testing.T) {
	bin := testutil.C(t, "tailmain", []string{"tailmain.c"}, "-O2", "-g")
	got, err := StackRoots(bin, "main")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"main", "run"}) {
		t.Errorf("StackRoots(main) = %v, want [main run]", got)
	}
	if got, err := StackRoots(bin, "run"); err != nil || !slices.Equal(got, []string{"run"}) {
		t.Errorf("StackRoots(run) = %v, %v; want [run] (work is called, not jumped to)", got, err)
	}
	if got, err := StackRoots(bin, "no_such_function"); err != nil || got != nil {
		t.Errorf("StackRoots(no_such_function) = %v, %v; want nil, nil", got, err)
	}
	g, err := CallGraph(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g["main"], "run") || !slices.Contains(g["run"], "work") {
		t.Errorf("call graph %v: want main -> run and run -> work", g)
	}
}

// grow hands its frame to realloc (a JMP into the PLT); keep calls free
// and puts, and main calls both: only grow jumps out.
func TestJumpsOut(t *testing.T) {
	bin := testutil.C(t, "jumpsout", []string{"jumpsout.c"}, "-O2", "-g")
	out, err := JumpsOut(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !out["grow"] || out["keep"] || out["main"] {
		t.Errorf("JumpsOut = %v, want grow and not keep or main", out)
	}
}
