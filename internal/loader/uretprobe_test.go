package loader

import (
	"os"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// A return address that is the return probes' trampoline (the first byte
// of the [uprobes] page, one past the end of the code before it) is the
// frame "[uretprobe]" of the [uprobes] object, followed by the rest of
// the stack as unwound; an instruction pointer in that page is a frame
// of [uprobes] at its offset (a probe's trap, not a return address). The
// trampoline's own address minus one, which symbolizes return addresses,
// lies outside every mapping: it must not become "[unknown]".
func TestUretprobeTrampolineFrame(t *testing.T) {
	bin, offs, bid := hierFuncs(t)
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	const base, tramp = 0x555555554000, 0x7fffffffe000
	leaf := func(fn string, d uint64) uint64 { return base + offs[fn] + d }
	ret := func(fn string) uint64 { return base + offs[fn] + 9 }
	stacks := [][]uint64{
		{leaf("worker", 4), tramp, ret("main")},
		{leaf("worker", 4), tramp, tramp, ret("main")},
		{tramp + 4, ret("main")},
		{tramp + 0x80, ret("main")},
	}
	recs := []recording.Record{
		&recording.Meta{Frequency: 1000},
		&recording.Comm{Time: 1, PID: 11, TID: 11, Exec: true, Name: "hier"},
		&recording.Mmap{Time: 1, PID: 11, TID: 11, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid},
		&recording.Mmap{Time: 1, PID: 11, TID: 11, Start: tramp, Len: 0x1000, Prot: 5, Path: "[uprobes]"},
	}
	for i, s := range stacks {
		recs = append(recs, &recording.Stack{ID: uint64(i + 1), User: s},
			&recording.Sample{Time: uint64(10 + i), PID: 11, TID: 11, Period: 1000, StackID: uint64(i + 1)})
	}
	recs = append(recs, &recording.End{Time: 100})
	p, err := Load([]string{writeRec(t, recs...)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"worker;[uretprobe];main",
		"worker;[uretprobe];[uretprobe];main",
		"[uprobes]+0x4;main",
		"[uprobes]+0x80;main",
	}
	if len(p.Samples) != len(want) {
		t.Fatalf("%d samples, want %d", len(p.Samples), len(want))
	}
	for i, s := range p.Samples {
		var names []string
		for _, fi := range p.StackAt(s.Stack) {
			f := p.FrameAt(fi)
			names = append(names, f.Name())
			if f.Function == profile.Uretprobe && f.Object != profile.UprobesObject {
				t.Errorf("sample %d: %s in object %q", i, f.Name(), f.Object)
			}
		}
		if got := strings.Join(names, ";"); got != want[i] {
			t.Errorf("sample %d: stack %s, want %s", i, got, want[i])
		}
	}
}
