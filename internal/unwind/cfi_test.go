package unwind

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

var dwarfRegNames = [numRegs]string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ra"}

// readelfCol renders one column of a row the way `readelf -wF` does.
func readelfCol(rw *row, col int) string {
	ru := rw.regs[col]
	switch ru.kind {
	case ruleUnspec, ruleUndefined:
		return "u"
	case ruleSame:
		return "s"
	case ruleOffset:
		return fmt.Sprintf("c%+d", ru.off)
	case ruleValOffset:
		return fmt.Sprintf("v%+d", ru.off)
	case ruleRegister:
		return fmt.Sprintf("r%d", ru.reg)
	case ruleExpr:
		return "exp"
	case ruleValExpr:
		return "vexp"
	}
	return "?"
}

func readelfCFA(rw *row) string {
	switch rw.cfa.kind {
	case cfaRegOff:
		return fmt.Sprintf("%s%+d", dwarfRegNames[rw.cfa.reg], rw.cfa.off)
	case cfaExpr:
		return "exp"
	}
	return "?"
}

var (
	fdeLine = regexp.MustCompile(`^[0-9a-f]+ [0-9a-f]+ [0-9a-f]+ FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+)`)
	rowLine = regexp.MustCompile(`^([0-9a-f]{16}) +(\S+)(.*)$`)
	entLine = regexp.MustCompile(`^[0-9a-f]{8,16} [0-9a-f]{8,16} `)
)

// crossCheck compares every row of every FDE, as printed by readelf -wF,
// with the row this package computes. It returns the number of rows that
// matched, at least one per FDE.
func crossCheck(t *testing.T, path string) int {
	t.Helper()
	testutil.NeedTool(t, "readelf")
	tab, err := LoadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	// readelf exits 1 on some system libraries (it fails to follow their
	// .gnu_debuglink) while printing the tables fine.
	out, err := exec.Command("readelf", "-wF", path).Output()
	if !bytes.Contains(out, []byte(" FDE ")) {
		t.Fatalf("readelf: %v", err)
	}
	var (
		cur     *fde
		cols    []int // DWARF register per readelf column, -1 if untracked
		rows    int
		fdes    int
		missing int
		bad     int
		rem     rememberStack
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := fdeLine.FindStringSubmatch(line); m != nil {
			lo, _ := strconv.ParseUint(m[1], 16, 64)
			hi, _ := strconv.ParseUint(m[2], 16, 64)
			cur = nil
			if lo == 0 || hi <= lo {
				continue
			}
			fdes++
			if f := tab.find(lo); f != nil && f.start == lo && f.end == hi {
				cur = f
			} else {
				missing++
			}
			continue
		}
		if entLine.MatchString(line) { // CIE or terminator
			cur = nil
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(line), "LOC") {
			cols = cols[:0]
			for _, name := range strings.Fields(line)[2:] {
				idx := -1
				for i, n := range dwarfRegNames {
					if n == name {
						idx = i
					}
				}
				cols = append(cols, idx)
			}
			continue
		}
		m := rowLine.FindStringSubmatch(line)
		if m == nil || cur == nil || len(line) < 17 {
			continue
		}
		loc, err := strconv.ParseUint(m[1], 16, 64)
		if err != nil {
			continue
		}
		var rw row
		if !rowAt(cur, loc, &rw, &rem) {
			bad++
			if bad < 10 {
				t.Errorf("%s: FDE %#x: row at %#x failed", filepath.Base(path), cur.start, loc)
			}
			continue
		}
		rows++
		got := []string{readelfCFA(&rw)}
		want := []string{m[2]}
		var fields []string
		for _, f := range strings.Fields(m[3]) {
			if !strings.HasPrefix(f, "(") { // "r9 (r9)": register rule
				fields = append(fields, f)
			}
		}
		for i, c := range cols {
			if c < 0 || i >= len(fields) {
				continue
			}
			got = append(got, readelfCol(&rw, c))
			want = append(want, fields[i])
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			bad++
			if bad < 10 {
				t.Errorf("%s: FDE %#x row %#x: got %v, readelf %v", filepath.Base(path), cur.start, loc, got, want)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d readelf FDEs not in the table (table has %d)", filepath.Base(path), missing, fdes, tab.Len())
	}
	t.Logf("%s: %d FDEs, %d rows match readelf, %d mismatches", filepath.Base(path), fdes, rows, bad)
	// Every FDE has at least its initial row.
	if rows < fdes {
		t.Errorf("%s: %d rows matched for %d FDEs, want one or more each", filepath.Base(path), rows, fdes)
	}
	return rows
}

func libcPath(t testing.TB) string {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	testutil.Need(t, false, "no libc.so.6 found")
	return ""
}

func TestCFIMatchesReadelfLibc(t *testing.T) {
	if crossCheck(t, libcPath(t)) < 1000 {
		t.Error("too few rows checked")
	}
}

func TestCFIMatchesReadelfC(t *testing.T) {
	for _, flags := range [][]string{
		{"-O2", "-fomit-frame-pointer"},
		{"-O0", "-fno-omit-frame-pointer"},
		// .debug_frame only: no .eh_frame at all.
		{"-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"},
	} {
		bin := testutil.C(t, "hier", []string{"hier.c"}, flags...)
		// hier's four functions and the C run-time's: 7 FDEs, 11 to 19
		// rows with these flags (a function that pushes or has a frame
		// pointer adds rows to its initial one).
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			if n := crossCheck(t, bin); n < 8 {
				t.Errorf("%d rows matched, want 8 or more", n)
			}
		})
	}
}

func TestCFIMatchesReadelfGo(t *testing.T) {
	// Go binaries carry only a (compressed) .debug_frame.
	// The runtime alone has over a thousand functions.
	if n := crossCheck(t, testutil.Go(t, "gospin")); n < 1000 {
		t.Errorf("%d rows matched, want 1000 or more", n)
	}
}

func TestNoCFI(t *testing.T) {
	bin := testutil.Go(t, "gospin", "-ldflags=-s -w")
	_, err := LoadTable(bin)
	if !errors.Is(err, ErrNoCFI) {
		t.Fatalf("stripped Go binary: got %v, want ErrNoCFI", err)
	}
	if _, err := LoadTable("/nonexistent/file"); err == nil {
		t.Fatal("missing file: no error")
	}
	var c TableCache
	_, err1 := c.Get(bin)
	_, err2 := c.Get(bin)
	if err1 == nil || err1 != err2 {
		t.Fatalf("cache: errors %v, %v; want the same cached error", err1, err2)
	}
	t1, err := c.Get(libcPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if t2, _ := c.Get(libcPath(t)); t2 != t1 {
		t.Fatal("cache loaded libc twice")
	}
}

// TestRowCache: a row through a table's cache is the row the FDE's
// instructions give, at the first look-up and at the next, whatever other
// addresses took its slot in between (libc's thousands of FDEs, at several
// addresses each, through 128 slots, from two goroutines).
func TestRowCache(t *testing.T) {
	tab, err := LoadTable(libcPath(t))
	if err != nil {
		t.Fatal(err)
	}
	check := func() error {
		var got, want row
		var stack rememberStack
		for round := 0; round < 2; round++ {
			for i := range tab.fdes {
				f := &tab.fdes[i]
				for _, pc := range []uint64{f.start, f.start + 1, f.start + 4, (f.start + f.end) / 2, f.end - 1} {
					okw := rowAt(f, pc, &want, &stack)
					okg := tab.rowAt(f, pc, &got, &stack)
					if okg != okw || okw && got != want {
						return fmt.Errorf("round %d, FDE [%#x, %#x) at %#x: cached %v %+v, computed %v %+v", round, f.start, f.end, pc, okg, got, okw, want)
					}
				}
			}
		}
		return nil
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- check() }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if tab.rows.slots == nil {
		t.Fatal("no row was cached")
	}
}
