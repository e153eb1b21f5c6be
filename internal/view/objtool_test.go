package view

import (
	"regexp"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// pprof's object tool on culprit's reader, on a compiled program: a
// function's symbol by its name, the frames at a file offset, and its code
// decoded from its first byte however the range asked starts and ends.
func TestObjTool(t *testing.T) {
	bin := testutil.C(t, "deeprec", []string{"deeprec.c"}, "-O2", "-g")
	sym := testutil.Symbol(t, bin, "descend")
	opened := 0
	s := symbol.New(symbol.Options{})
	tool := newObjTool(func(path string) (*symbol.Object, error) {
		opened++
		return s.Object(path, nil)
	})
	// The profile's addresses are file offsets, its mapping maps them
	// onto themselves.
	off := testutil.FileOffset(t, bin, sym.Value)
	f, err := tool.Open(bin, 0, off+sym.Size, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.ObjAddr(off); err != nil || v != sym.Value {
		t.Errorf("ObjAddr(0x%x) = 0x%x, %v; want 0x%x", off, v, err, sym.Value)
	}
	syms, err := f.Symbols(regexp.MustCompile(`^descend$`), 0)
	if err != nil || len(syms) != 1 || syms[0].Start != sym.Value || syms[0].End != sym.Value+sym.Size-1 {
		t.Fatalf("Symbols(descend) = %v, %v; want one at [0x%x, 0x%x]", syms, err, sym.Value, sym.Value+sym.Size-1)
	}
	if at, _ := f.Symbols(nil, sym.Value+1); len(at) != 1 || at[0].Name[0] != "descend" {
		t.Errorf("Symbols holding 0x%x: %v", sym.Value+1, at)
	}
	frames, err := f.SourceLine(off)
	if err != nil || len(frames) == 0 || frames[len(frames)-1].Func != "descend" || !strings.HasSuffix(frames[0].File, "deeprec.c") || frames[0].Line == 0 {
		t.Errorf("SourceLine(0x%x) = %v, %v", off, frames, err)
	}

	whole, err := tool.Disasm(bin, sym.Value, sym.Value+sym.Size, false)
	if err != nil || len(whole) < 4 {
		t.Fatalf("Disasm of descend: %d instructions, %v", len(whole), err)
	}
	calls := 0
	for i, in := range whole {
		if in.Function != "descend" || !strings.HasSuffix(in.File, "deeprec.c") || in.Text == "" || in.Text == "(bad)" {
			t.Errorf("instruction %d: %+v", i, in)
		}
		if i > 0 && in.Addr <= whole[i-1].Addr {
			t.Errorf("instruction %d at 0x%x after 0x%x", i, in.Addr, whole[i-1].Addr)
		}
		if strings.HasPrefix(in.Text, "call") && strings.HasSuffix(in.Text, "# descend") {
			calls++
		}
	}
	if calls == 0 {
		t.Errorf("no call of descend decoded in descend")
	}
	// A range from the middle of the first instruction to past the end:
	// the same instructions, less the first, none outside.
	part, err := tool.Disasm(bin, sym.Value+1, sym.Value+sym.Size+64, false)
	if err != nil || len(part) < len(whole)-1 {
		t.Fatalf("Disasm from inside the first instruction: %d instructions, %v", len(part), err)
	}
	for i, in := range whole[1:] {
		if part[i] != in {
			t.Errorf("from inside the first instruction, instruction %d: %+v, want %+v", i, part[i], in)
			break
		}
	}
	if intel, err := tool.Disasm(bin, sym.Value, sym.Value+sym.Size, true); err != nil || len(intel) != len(whole) || intel[1].Text == whole[1].Text {
		t.Errorf("Intel syntax: %d instructions, %v; second %q against %q", len(intel), err, intel[1].Text, whole[1].Text)
	}
	if _, err := tool.Open("[kernel.kallsyms]", 0, 1, 0, ""); err == nil {
		t.Errorf("the kernel opened as a file")
	}
	if opened != 2 {
		t.Errorf("objects opened %d times, want once each", opened)
	}
}

// A GCC clone is found by the name culprit gives it in profiles, as
// pprof's pages anchor it (^scale$), and shown under it.
func TestObjToolClone(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	sym := testutil.Symbol(t, bin, "scale.constprop.0")
	s := symbol.New(symbol.Options{})
	tool := newObjTool(func(path string) (*symbol.Object, error) { return s.Object(path, nil) })
	f, err := tool.Open(bin, 0, 1<<20, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols(regexp.MustCompile(`^scale$`), 0)
	if err != nil || len(syms) != 1 || syms[0].Start != sym.Value || len(syms[0].Name) != 2 ||
		syms[0].Name[0] != "scale" || syms[0].Name[1] != "scale.constprop.0" {
		t.Errorf("Symbols(^scale$) = %v, %v; want scale (scale.constprop.0) at 0x%x", syms, err, sym.Value)
	}
	if raw, _ := f.Symbols(regexp.MustCompile(`constprop`), 0); len(raw) != 1 {
		t.Errorf("Symbols(constprop) = %v, want the clone by its symbol", raw)
	}
}
