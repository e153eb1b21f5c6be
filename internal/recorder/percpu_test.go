package recorder

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/proc"
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
