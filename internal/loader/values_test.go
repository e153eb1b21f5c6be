package loader

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// hierFuncs builds hier.c at -O2 -g and returns it with the file offsets of
// its functions and its build-id.
func hierFuncs(t *testing.T) (string, map[string]uint64, []byte) {
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	offs := map[string]uint64{}
	for _, s := range syms {
		for _, p := range f.Progs {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				offs[s.Name] = s.Value - p.Vaddr + p.Off
			}
		}
	}
	var bid []byte
	if s := f.Section(".note.gnu.build-id"); s != nil {
		if d, err := s.Data(); err == nil && len(d) > 16 {
			bid = d[16:] // namesz 4 ("GNU\0"), descsz, type, name: the id follows
		}
	}
	return bin, offs, bid
}

func writeRec(t *testing.T, recs ...recording.Record) string {
	path := filepath.Join(t.TempDir(), "v.rec")
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestValueFrame(t *testing.T) {
	bin, offs, bid := hierFuncs(t)
	st, _ := os.Stat(bin)
	const base = 0x555555554000
	const pid = 77
	leaf := base + offs["worker"] + 4
	ret := base + offs["dispatch_2"] + 9 // a return address inside dispatch_2
	path := writeRec(t,
		&recording.Meta{Frequency: 1000},
		&recording.Mmap{Time: 1, PID: 9, TID: 9, Start: 0x400000, Len: 0x1000, Path: "/usr/bin/other", BuildID: []byte{9}},
		&recording.Comm{Time: 1, PID: pid, TID: pid, Exec: true, Name: "hier"},
		&recording.Mmap{Time: 1, PID: pid, TID: pid, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid},
		&recording.Stack{ID: 1, Kernel: []uint64{0xffffffff81000010}, User: []uint64{leaf, ret}},
		&recording.Sample{Time: 10, PID: pid, TID: pid, Period: 1000, StackID: 1},
		&recording.ValueSource{ID: 1, Class: recording.SourceVariable, Name: "n", Function: "worker"},
		&recording.Value{Time: 10, PID: pid, TID: pid, Source: 1, PC: leaf, Bits: 5},
		&recording.Value{Time: 10, PID: pid, TID: pid, Source: 1, Depth: 1, PC: ret, Bits: 6},
		&recording.Value{Time: 10, PID: pid, TID: pid, Source: 1, Depth: 1, PC: 0x1000, Bits: 7},
		&recording.Value{Time: 10, PID: pid, TID: pid, Source: 1, Type: recording.ValueMissing},
		&recording.End{Time: 11},
	)
	p, err := Load([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Values) != 4 {
		t.Fatalf("%d values", len(p.Values))
	}
	check := func(p *profile.Profile) {
		t.Helper()
		want := []string{"worker", "dispatch_2", profile.Unknown, ""}
		for i, v := range p.Values {
			f, ok := p.ValueFrame(v)
			if want[i] == "" {
				if ok || v.FrameIndex() != -1 {
					t.Errorf("value %d: frame %+v for a value without PC", i, f)
				}
				continue
			}
			if !ok || f.Name() != want[i] && !(want[i] == profile.Unknown && f.Object == profile.Unknown) {
				t.Errorf("value %d: frame %+v, want %s", i, f, want[i])
			}
			if i < 2 && (!strings.HasSuffix(f.File, "hier.c") || f.Line == 0 || f.Object != bin) {
				t.Errorf("value %d: %+v, want a line of hier.c in %s", i, f, bin)
			}
		}
	}
	check(p)
	// Filters keep the frames of the values, whatever they do to stacks.
	check(p.Apply(profile.Filter{Kernel: profile.KernelExclude}))
	check(p.Apply(profile.Filter{Kernel: profile.KernelOnly}))

	exes, err := Executables([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	e := exes[0]
	if e.Path != bin || string(e.BuildID) != string(bid) || !e.FromValues || e.PID != pid {
		t.Errorf("executable %+v", e)
	}
	if len(bid) > 0 && !strings.Contains(e.String(), fmt.Sprintf("build-id %x", bid)) {
		t.Errorf("String() = %q", e.String())
	}
}

func TestExecutables(t *testing.T) {
	a := writeRec(t, &recording.Meta{},
		&recording.Mmap{Time: 1, PID: 5, TID: 5, Start: 0x400000, Len: 0x1000, Path: "[vdso]"},
		&recording.Mmap{Time: 1, PID: 5, TID: 5, Start: 0x500000, Len: 0x1000, Path: "/bin/prog", BuildID: []byte{0xaa}},
		&recording.Mmap{Time: 1, PID: 5, TID: 5, Start: 0x7f0000, Len: 0x1000, Path: "/lib/libc.so.6"},
		&recording.Sample{Time: 2, PID: 5, TID: 5},
	)
	b := writeRec(t, &recording.Meta{},
		&recording.Mmap{Time: 1, PID: 5, TID: 5, Start: 0x500000, Len: 0x1000, Path: "/bin/prog", BuildID: []byte{0xbb}},
		// A fork then an exec: the child's values are in the new program.
		&recording.Task{Time: 2, PID: 6, PPID: 5, TID: 6, PTID: 5},
		&recording.Comm{Time: 3, PID: 6, TID: 6, Exec: true, Name: "child"},
		&recording.Mmap{Time: 3, PID: 6, TID: 6, Start: 0x500000, Len: 0x1000, Path: "/bin/child", BuildID: []byte{0xcc}},
		&recording.ValueSource{ID: 1, Class: recording.SourceVariable, Name: "x"},
		&recording.Value{Time: 4, PID: 6, TID: 6, Source: 1, PC: 0x500010},
	)
	empty := writeRec(t, &recording.Meta{})
	exes, err := Executables([]string{a, b, empty})
	if err != nil {
		t.Fatal(err)
	}
	if exes[0].Path != "/bin/prog" || exes[0].FromValues || string(exes[0].BuildID) != "\xaa" {
		t.Errorf("a: %+v", exes[0])
	}
	if exes[1].Path != "/bin/child" || !exes[1].FromValues || exes[1].PID != 6 {
		t.Errorf("b: %+v", exes[1])
	}
	if exes[2].Path != "" {
		t.Errorf("empty: %+v", exes[2])
	}
	same := profile.Executable{Path: "/bin/prog", BuildID: []byte{0xaa}}
	if !exes[0].Same(same) || exes[0].Same(profile.Executable{Path: "/bin/prog", BuildID: []byte{0xbb}}) ||
		!exes[0].Same(profile.Executable{Path: "/bin/prog"}) || exes[0].Same(profile.Executable{Path: "/bin/other"}) {
		t.Error("Same")
	}
	if _, err := Executables([]string{filepath.Join(t.TempDir(), "missing.rec")}); err == nil {
		t.Error("missing file accepted")
	}
}
