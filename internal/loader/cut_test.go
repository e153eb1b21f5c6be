package loader

import (
	"os"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// Samples that lost callers get a remedy only where it would help: a
// larger stack copy for dwarf-mode stacks that ended in an object's code
// (where the copy ran out), none for stacks that ended in code no object
// file describes (a uprobe's trampoline at the top of the address space),
// and none for a trace's samples, recorded without a call-graph mode.
func TestCutWarningWords(t *testing.T) {
	bin, offs, bid := hierFuncs(t)
	st, _ := os.Stat(bin)
	const base = 0x555555554000
	const pid = 77
	leaf := base + offs["worker"] + 4
	ret := base + offs["dispatch_2"] + 9
	const tramp = 0x7fffffffe000
	for _, c := range []struct {
		name, graph string
		outer       uint64
		want, not   string
	}{
		{"dwarf-copy", "dwarf", ret, "a larger --stack-size may help", "no larger"},
		{"dwarf-trampoline", "dwarf", tramp, "which no larger --stack-size unwinds", "may help"},
		{"trace", "", ret, "callers' totals are too low", "--stack-size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			recs := []recording.Record{
				&recording.Meta{Frequency: 1000, CallGraph: c.graph},
				&recording.Comm{Time: 1, PID: pid, TID: pid, Exec: true, Name: "hier"},
				&recording.Mmap{Time: 1, PID: pid, TID: pid, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid},
				&recording.Stack{ID: 1, User: []uint64{leaf, c.outer}},
			}
			for i := range 20 {
				recs = append(recs, &recording.Sample{Time: uint64(10 + i), PID: pid, TID: pid, Period: 1000, StackID: 1, Truncated: true})
			}
			p, err := Load([]string{writeRec(t, recs...)}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := strings.Join(p.Warnings, "\n")
			if !strings.Contains(w, c.want) || strings.Contains(w, c.not) {
				t.Errorf("warnings %q: want %q, not %q", w, c.want, c.not)
			}
		})
	}
}
