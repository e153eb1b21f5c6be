package dwarfx

import (
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestGoBinary reads a Go binary's DWARF 5 (compressed sections, register
// ABI): the parameter n of main.spinAlpha arrives in rax.
func TestGoBinary(t *testing.T) {
	bin := testutil.Go(t, "gospin")
	info, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	fs := info.FunctionsNamed("main.spinAlpha")
	if len(fs) != 1 {
		t.Fatalf("main.spinAlpha: %v", fs)
	}
	fn := fs[0]
	if got, ok := info.Function(fn.Entry + 1); !ok || got != fn {
		t.Fatalf("Function(entry+1) = %v", got)
	}
	var n *Variable
	for _, v := range fn.Variables(fn.Entry) {
		if v.Name == "n" {
			n = v
		}
	}
	if n == nil || !n.IsParam {
		t.Fatalf("no parameter n at entry: %s", info.Describe(fn.Entry))
	}
	// Go's DWARF gives a local a line but no file: its function's.
	if filepath.Base(n.DeclFile) != "main.go" || n.DeclLine == 0 || n.DeclFile != fn.DeclFile {
		t.Errorf("n declared at %s:%d, want main.go (main.spinAlpha's file %s)", n.DeclFile, n.DeclLine, fn.DeclFile)
	}
	if ty := n.Type(); ty.Kind != Int || ty.Size != 8 || ty.Name != "int" {
		t.Errorf("n has type %+v", ty)
	}
	l, ok := n.Location(fn.Entry)
	if r, isReg := l.Register(); !ok || !isReg || r != RegRAX {
		t.Fatalf("n at entry: %s", l)
	}
	f := &Frame{}
	f.SetReg(RegRAX, 400000000)
	val, err := n.Read(fn.Entry, f)
	if err != nil || n.Type().Format(val.Bytes) != "400000000" {
		t.Errorf("n = %v %v", val, err)
	}
	lists := 0
	for _, v := range fn.AllVariables() {
		if v.HasLocationList() {
			lists++
		}
	}
	if lists == 0 {
		t.Error("no location lists in main.spinAlpha")
	}
	g, ok := info.Global("main.sink")
	if !ok || g.Type().Name != "uint64" || g.Type().Kind != Uint {
		t.Errorf("main.sink: %v %v", g, ok)
	}
}
