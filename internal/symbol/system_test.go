package symbol

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestSystemLibc symbolizes the system's libc through its separate debug
// file in the default /usr/lib/debug/.build-id (Debian's libc6-dbg; the test
// skips without it): a large, compressed DWARF 5 object. One lookup must
// parse one unit, not the library; function names and lines must agree with
// addr2line. File names are not compared: binutils 2.40 prints DWARF 5
// paths of functions defined in headers against the primary file. Where
// addr2line prints an assembler-label linkage name (__GI___libc_malloc) we
// report the source DW_AT_name (__libc_malloc).
func TestSystemLibc(t *testing.T) {
	const lib = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(lib)
	testutil.Need(t, err == nil, fmt.Sprint("the system's libc: ", err))
	defer f.Close()
	id := elfx.BuildID(f)
	h := hexString(id)
	testutil.Need(t, len(id) > 0, "libc has no build-id")
	_, err = os.Stat(filepath.Join("/usr/lib/debug/.build-id", h[:2], h[2:]+".debug"))
	testutil.Need(t, err == nil, fmt.Sprint("no libc debug file in /usr/lib/debug (libc6-dbg): ", err))
	o, err := New(Options{}).Object(lib, id)
	if err != nil {
		t.Fatal(err)
	}
	if !o.HasSymbols() || !o.HasLines() || o.DebugFile() == "" {
		t.Fatalf("HasSymbols %v HasLines %v DebugFile %q", o.HasSymbols(), o.HasLines(), o.DebugFile())
	}
	mc, _ := elfSym(t, lib, "malloc")
	fr := o.Lookup(progOffset(t, f, mc+8))
	if len(fr) == 0 || fr[len(fr)-1].Function != "__libc_malloc" || fr[0].File == "" {
		t.Errorf("malloc: %+v", fr)
	}
	parsed := 0
	for _, c := range o.d.dw.cus {
		if c.cu.parsed {
			parsed++
		}
	}
	if parsed != 1 || len(o.d.dw.cus) < 100 {
		t.Errorf("one lookup parsed %d of %d units", parsed, len(o.d.dw.cus))
	}

	text := f.Section(".text")
	var addrs []uint64
	for a := text.Addr; a < text.Addr+text.Size; a += 1009 {
		addrs = append(addrs, a)
	}
	want := addr2line(t, lib, addrs)
	compared, bad, outlined := 0, 0, 0
	for _, a := range addrs {
		w := want[a]
		if len(w) == 0 || w[0].Function == "" {
			continue
		}
		got := o.Lookup(progOffset(t, f, a))
		if len(got) == 0 {
			continue // padding past a function's end, which addr2line attributes to it
		}
		compared++
		if len(got) < len(w) {
			// An outlined part GCC inlined back into its function's head
			// is one frame with it (elfx.FuncNode.Outlined), where
			// addr2line has the function twice, the outer one at its
			// declaration, at or above the part's lines.
			w = slices.Clone(w)
			for i := 0; i+1 < len(w); i++ {
				if w[i].Function == w[i+1].Function && w[i+1].Line <= w[i].Line {
					w = slices.Delete(w, i+1, i+2)
					outlined++
				}
			}
		}
		ok := len(got) == len(w)
		for i := 0; ok && i < len(w); i++ {
			ok = strings.TrimPrefix(got[i].Function, "__GI_") == strings.TrimPrefix(w[i].Function, "__GI_") && got[i].Line == w[i].Line && (got[i].File != "") == (w[i].File != "") &&
				got[i].Inlined == (i < len(w)-1)
		}
		if !ok {
			bad++
			if bad <= 10 {
				t.Errorf("%#x: %+v, addr2line %+v", a, got, w)
			}
		}
	}
	t.Logf("%d addresses compared, %d mismatches, %d outlined parts inlined back", compared, bad, outlined)
	if compared < 1000 {
		t.Errorf("only %d addresses compared", compared)
	}
}
