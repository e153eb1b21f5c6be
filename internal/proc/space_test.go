package proc

import (
	"os"
	"testing"
)

func TestSpace(t *testing.T) {
	var sp Space
	sp.Add(Mapping{Start: 0x1000, End: 0x2000, Path: "/a"})
	sp.Add(Mapping{Start: 0x3000, End: 0x4000, Path: "/b"})
	sp.Add(Mapping{Start: 0x1800, End: 0x3800, Path: "/c"}) // overlaps both: replaces them
	for _, c := range []struct {
		pc   uint64
		want string
	}{{0x1000, ""}, {0x1800, "/c"}, {0x37ff, "/c"}, {0x3800, ""}, {0x500, ""}} {
		m, ok := sp.Find(c.pc)
		if (c.want == "") == ok || m.Path != c.want {
			t.Errorf("Find(%#x) = %q %v, want %q", c.pc, m.Path, ok, c.want)
		}
	}
	cl := sp.Clone()
	cl.Add(Mapping{Start: 0x9000, End: 0xa000, Path: "/d"})
	if _, ok := sp.Find(0x9000); ok {
		t.Error("a clone shares its mappings with the original")
	}
}

func TestMapsAndCmdlineOfSelf(t *testing.T) {
	maps, err := Maps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var sp Space
	exe := false
	for _, m := range maps {
		if m.Exec() {
			sp.Add(m)
			exe = exe || m.Path == Exe(os.Getpid())
		}
	}
	if !exe {
		t.Errorf("no executable mapping of %s", Exe(os.Getpid()))
	}
	if args := Cmdline(os.Getpid()); len(args) == 0 || args[0] != os.Args[0] {
		t.Errorf("Cmdline = %q, want %q first", args, os.Args[0])
	}
	if _, err := Maps(1 << 30); err == nil {
		t.Error("maps of a PID that cannot exist")
	}
}
