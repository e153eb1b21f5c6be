package schema

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// schema.c at -O0 (variables in frame slots, DW_OP_fbreg with a
// DW_OP_call_frame_cfa frame base) and -O2 (registers, location lists).
var levels = []string{"-O0", "-O2"}

func buildSchema(t *testing.T, level string) string {
	t.Helper()
	return testutil.C(t, "schema"+level, []string{"schema.c"}, level, "-g")
}

func find(s *Schema, function, name string) (Entry, bool) {
	for _, e := range s.Entries {
		if e.Function == function && e.Variable == name {
			return e, true
		}
	}
	return Entry{}, false
}

func dump(s *Schema) string {
	var b bytes.Buffer
	s.Write(&b)
	return b.String()
}

func TestGenerateTags(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			bin := buildSchema(t, level)
			s, err := Generate(bin, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := []struct {
				function, name string
				tags           Tags // at least these
			}{
				{"filter", "i", Loop},        // for (long i = 0; i < n; i++)
				{"filter", "x", Cond | Args}, // if (x > limit) kept += consume(x, i)
				{"filter", "limit", Cond},    // if (x > limit)
				{"filter", "n", Cond},        // i < n
				{"walk", "scanned", Loop},    // stepped with the pointer walk, never compared
				{"walk", "p", Cond},          // p != NULL
				{Global, "cfg.limit", Cond},  // a[k] > cfg.limit in over_limit
				{Global, "counter", 0},       // a global: listed, whatever its use
				{Global, "hits", 0},          // a pointer to a scalar
				{Global, "cfg.mode", 0},      // a member not used at all
				{Global, "hit_count", 0},     // a static local is a global
				{"main", "k", Loop | Cond},   // main's fill loop
				{"main", "a", Args},          // filter(a, n, cfg.limit)
			}
			for _, w := range want {
				e, ok := find(s, w.function, w.name)
				if !ok {
					t.Errorf("%s:%s not in the schema\n%s", w.function, w.name, dump(s))
					continue
				}
				if e.Tags&w.tags != w.tags {
					t.Errorf("%s:%s has tags %s, want at least %s", w.function, w.name, e.Tags, w.tags)
				}
			}
			// Locals without a loop, branch or call use are not selected:
			// kept is only added to.
			if e, ok := find(s, "filter", "kept"); ok {
				t.Errorf("filter:kept selected with tags %s", e.Tags)
			}
			// Conditions do not make loop counters of what they compare.
			if e, _ := find(s, "filter", "limit"); e.Tags&Loop != 0 {
				t.Errorf("filter:limit tagged loop")
			}
			if e, _ := find(s, "filter", "x"); e.Tags&Loop != 0 {
				t.Errorf("filter:x tagged loop")
			}
			g, _ := find(s, Global, "cfg.limit")
			if g.Type != "long int" || !strings.HasSuffix(g.File, "schema.c") || g.Line != 23 {
				t.Errorf("cfg.limit: %+v", g)
			}
			if h, _ := find(s, Global, "hits"); h.Type != "int *" {
				t.Errorf("hits: type %q", h.Type)
			}
			if s.BuildID == "" || !filepath.IsAbs(s.Binary) {
				t.Errorf("header: binary %q build-id %q", s.Binary, s.BuildID)
			}
		})
	}
}

// Loop counters GCC -O2 describes as computed from two registers (the
// walking pointer minus the array's start) or from a register and a word
// read through another (the start read through the object's pointer) are
// followed through those registers: stepped in the loop, compared at its
// exit.
func TestGeneratePointerWalkCounters(t *testing.T) {
	bin := testutil.C(t, "ptrwalk", []string{"ptrwalk.c"}, "-O2", "-g")
	s, err := Generate(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range []string{"encode", "digest"} {
		e, ok := find(s, fn, "i")
		if !ok {
			t.Errorf("%s:i not in the schema\n%s", fn, dump(s))
			continue
		}
		if e.Tags&Loop == 0 {
			t.Errorf("%s:i has tags %s, want loop", fn, e.Tags)
		}
	}
}

// The vProf end-to-end programs' root causes get the tags their patterns
// need (e2e/vprof_test.go checks the patterns).
func TestGenerateVprofPrograms(t *testing.T) {
	for _, c := range []struct {
		prog, function, name string
		tags, not            Tags
	}{
		{"vprof_wrong", "recv_scan_log", "available", Cond, Loop}, // if (available < PAGES_PER_BLOCK), while (… available >= 0)
		{"vprof_wrong", "recv_scan_log", "b", Loop | Cond, 0},
		{"vprof_missing", "pod_killpg", "i", Loop | Cond | Args, 0},
		{"vprof_scal", "buf_lru_scan_and_free", "scanned", Loop, 0},
	} {
		bin := testutil.C(t, c.prog, []string{c.prog + ".c"}, "-O2", "-g", "-pthread")
		s, err := Generate(bin, Options{Component: testutil.Targets()})
		if err != nil {
			t.Fatal(err)
		}
		e, ok := find(s, c.function, c.name)
		if !ok {
			t.Errorf("%s: %s:%s not in the schema", c.prog, c.function, c.name)
			continue
		}
		if e.Tags&c.tags != c.tags || e.Tags&c.not != 0 {
			t.Errorf("%s: %s:%s has tags %s, want %s and not %s", c.prog, c.function, c.name, e.Tags, c.tags, c.not)
		}
		// recv_scan_log's rounds is only incremented in one branch, never
		// tested: not an induction variable, not selected.
		if _, ok := find(s, "recv_scan_log", "rounds"); ok {
			t.Errorf("recv_scan_log:rounds selected")
		}
	}
}

func TestComponent(t *testing.T) {
	bin := buildSchema(t, "-O2")
	all, err := Generate(bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Generate(bin, Options{Component: testutil.Targets()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() == 0 || s.Len() > all.Len() {
		t.Fatalf("component: %d of %d variables", s.Len(), all.Len())
	}
	for _, e := range s.Entries {
		if !strings.HasPrefix(e.File, testutil.Targets()+"/") {
			t.Errorf("%s outside the component", e)
		}
	}
	rel, _ := Generate(bin, Options{Component: "testdata/targets"})
	if rel.Len() != s.Len() {
		t.Errorf("relative component: %d variables, absolute %d", rel.Len(), s.Len())
	}
	if none, _ := Generate(bin, Options{Component: "/nowhere"}); none.Len() != 0 {
		t.Errorf("component /nowhere kept %d variables", none.Len())
	}
	for _, c := range []struct {
		file, prefix string
		want         bool
	}{
		{"/src/storage/innobase/buf/buf0lru.cc", "storage/innobase/buf", true},
		{"/src/storage/innobase/buf/buf0lru.cc", "/src/storage", true},
		{"/src/storage/innobase/buf/buf0lru.cc", "/src/stor", false},
		{"/src/storage/innobase/buffer.cc", "storage/innobase/buf", false},
		{"storage/innobase/buf/x.c", "storage/innobase/buf/", true},
	} {
		if got := UnderComponent(c.file, c.prefix); got != c.want {
			t.Errorf("UnderComponent(%q, %q) = %v", c.file, c.prefix, got)
		}
	}
}

func TestWriteParse(t *testing.T) {
	s := &Schema{Binary: "/bin/x", BuildID: "abcd", Component: "src", Entries: []Entry{
		{File: "/src/a.c", Function: Global, Line: 3, Variable: "cfg.limit", Type: "long int", Tags: Cond},
		{File: "/src/a,b.c", Function: "f", Line: 9, Variable: "cb", Type: "void (*)(int, int)", Tags: Args | Loop},
		{File: "/src/a.c", Function: "g", Line: 12, Variable: "n", Type: "int", Tags: 0},
	}}
	text := dump(s)
	if !strings.Contains(text, "# build-id: abcd\n") || !strings.Contains(text, "/src/a.c,#global,3,cfg.limit,long int,cond\n") ||
		!strings.Contains(text, `"void (*)(int, int)",loop|args`) || !strings.Contains(text, ",none\n") {
		t.Errorf("written:\n%s", text)
	}
	got, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got.Binary != s.Binary || got.BuildID != s.BuildID || got.Component != s.Component || len(got.Entries) != 3 {
		t.Fatalf("parsed %+v", got)
	}
	for i := range s.Entries {
		if got.Entries[i] != s.Entries[i] {
			t.Errorf("entry %d: %+v, want %+v", i, got.Entries[i], s.Entries[i])
		}
	}
	e, ok := got.Lookup(Key{Function: "f", Variable: "cb", File: "/src/a,b.c", Line: 9})
	if !ok || e.Tags != Args|Loop {
		t.Errorf("lookup: %+v %v", e, ok)
	}
	// Hand-edited: other separators, spaces, vProf's spelling, blank lines.
	hand := "# my schema\n\n/src/a.c, f, 4, x, int, cond;args\n/src/a.c,#global,1,g,int,branch|arg\n/src/a.c,h,2,y,int,\"loop, cond\"\n"
	got, err = Parse(strings.NewReader(hand))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != 3 || got.Entries[0].Tags != Cond|Args || got.Entries[1].Tags != Cond|Args ||
		got.Entries[2].Tags != Loop|Cond || got.BuildID != "" {
		t.Errorf("hand-written: %+v", got)
	}
	for _, bad := range []string{
		"/a.c,f,1,x,int\n",                            // 5 fields
		"/a.c,f,one,x,int,none\n",                     // line
		"/a.c,f,1,x,int,hot\n",                        // tag
		"/a.c,,1,x,int,none\n",                        // function
		"/a.c,f,1,x,int,none\n/a.c,f,1,x,long,cond\n", // twice
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		} else if !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %v (no line number)", bad, err)
		}
	}
}

// TestID: a schema's identity follows its entries, not their order, the
// binary it names or its comments; any change of an entry changes it.
func TestID(t *testing.T) {
	entries := []Entry{
		{File: "/src/a.c", Function: Global, Line: 3, Variable: "cfg.limit", Type: "long int", Tags: Cond},
		{File: "/src/a.c", Function: "f", Line: 9, Variable: "n", Type: "int", Tags: Loop},
		{File: "/src/a.c", Function: "g", Line: 12, Variable: "m", Type: "int"},
	}
	s := &Schema{Binary: "/bin/x", BuildID: "abcd", Entries: entries}
	id := s.ID()
	if len(id) != 32 {
		t.Fatalf("ID %q: want 32 hex digits", id)
	}
	reordered := &Schema{Binary: "/elsewhere/x", Entries: []Entry{entries[2], entries[0], entries[1]}}
	if reordered.ID() != id {
		t.Errorf("the same entries in another order and binary: %s, want %s", reordered.ID(), id)
	}
	back, err := Parse(strings.NewReader(dump(s)))
	if err != nil {
		t.Fatal(err)
	}
	if back.ID() != id {
		t.Errorf("written and read back: %s, want %s", back.ID(), id)
	}
	seen := map[string]int{id: -1}
	for i := range entries {
		for _, change := range []func(*Entry){
			func(e *Entry) { e.Tags ^= Args },
			func(e *Entry) { e.Line++ },
			func(e *Entry) { e.Type += " *" },
			func(e *Entry) { e.Variable += "x" },
		} {
			es := append([]Entry(nil), entries...)
			change(&es[i])
			other := (&Schema{Entries: es}).ID()
			if j, dup := seen[other]; dup {
				t.Errorf("entry %d changed: ID %s, as change %d", i, other, j)
			}
			seen[other] = i
		}
	}
	if fewer := (&Schema{Entries: entries[:2]}).ID(); fewer == id {
		t.Errorf("one entry fewer: the same ID")
	}
}

func TestCheck(t *testing.T) {
	o0, o2 := buildSchema(t, "-O0"), buildSchema(t, "-O2")
	s, err := Generate(o0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check(o0, "s.schema"); err != nil {
		t.Errorf("own binary: %v", err)
	}
	err = s.Check(o2, "s.schema")
	var me *MismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) || me.Want != s.BuildID ||
		!strings.Contains(err.Error(), "build-id") || !strings.Contains(err.Error(), "culprit schema "+o2) {
		t.Errorf("other build: %v", err)
	}
	// Without a build-id the variables are matched by name: the -O2 build
	// declares the same ones.
	s.BuildID = ""
	if err := s.Check(o2, "s.schema"); err != nil {
		t.Errorf("by name: %v", err)
	}
	s.Entries = append(s.Entries, Entry{File: s.Entries[0].File, Function: "filter", Line: 40, Variable: "gone", Type: "int"})
	err = s.Check(o2, "s.schema")
	if !errors.As(err, &me) || len(me.Missing) != 1 || !strings.Contains(err.Error(), "filter:gone") {
		t.Errorf("missing variable: %v", err)
	}
}

func TestNoDWARF(t *testing.T) {
	bin := testutil.C(t, "schema-stripped", []string{"schema.c"}, "-O2", "-s")
	_, err := Generate(bin, Options{})
	var nd *NoDWARFError
	if !errors.As(err, &nd) || !strings.Contains(err.Error(), "no DWARF") || !strings.Contains(err.Error(), "culprit record, report") {
		t.Errorf("stripped: %v", err)
	}
	s := &Schema{Entries: []Entry{{File: "a.c", Function: "f", Line: 1, Variable: "x", Tags: Cond}}}
	if err := s.Check(bin, "s.schema"); !errors.As(err, &nd) {
		t.Errorf("check on a stripped binary: %v", err)
	}
	if _, err := Generate("/nonexistent", Options{}); err == nil {
		t.Error("no error for a missing file")
	}
}

func symbolAddr(t *testing.T, bin, name string) (uint64, uint64) {
	t.Helper()
	s := testutil.Symbol(t, bin, name)
	return s.Value, s.Size
}

// Basic blocks: they tile each function, start at its entry and at jump
// targets, and end after jumps.
func TestBlocks(t *testing.T) {
	for _, level := range levels {
		bin := buildSchema(t, level)
		c, err := OpenCode(bin)
		if err != nil {
			t.Fatal(err)
		}
		lo, size := symbolAddr(t, bin, "filter")
		var blocks []Block
		for a := lo; a < lo+size; {
			b, ok := c.Block(a)
			if !ok || b.Start != a || b.End <= a || b.Function != "filter" {
				t.Fatalf("%s: block at %#x: %+v %v", level, a, b, ok)
			}
			if mid, ok := c.Block(b.End - 1); !ok || mid != b {
				t.Errorf("%s: %#x in %v, want %v", level, b.End-1, mid, b)
			}
			blocks = append(blocks, b)
			a = b.End
		}
		if len(blocks) < 4 { // loop test, body, if, call at least
			t.Errorf("%s: filter has %d blocks: %v", level, len(blocks), blocks)
		}
		// Every jump ends a block and lands at one's start.
		testutil.NeedTool(t, "objdump")
		out, err := exec.Command("objdump", "-d", "--no-show-raw-insn", "--start-address="+hexs(lo), "--stop-address="+hexs(lo+size), bin).Output()
		if err != nil {
			t.Fatalf("objdump: %v", err)
		}
		starts := map[uint64]bool{}
		for _, b := range blocks {
			starts[b.Start] = true
		}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 3 || !strings.HasPrefix(f[1], "j") {
				continue
			}
			tg, err := strconv.ParseUint(f[2], 16, 64)
			if err == nil && tg >= lo && tg < lo+size && !starts[tg] {
				t.Errorf("%s: jump target %#x does not start a block (%s)", level, tg, line)
			}
		}
		if _, ok := c.Block(0); ok {
			t.Error("a block at address 0")
		}
		off := uint64(0)
		f, _ := elf.Open(bin)
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
				off = lo - p.Vaddr + p.Off
			}
		}
		f.Close()
		if a, ok := c.AddrOf(off); !ok || a != lo {
			t.Errorf("AddrOf(%#x) = %#x, %v; want %#x", off, a, ok, lo)
		}
	}
}

// Clobbers: a leaf function writes few registers; a function calling
// through the PLT may write every caller-saved one.
func TestClobbers(t *testing.T) {
	bin := buildSchema(t, "-O2")
	c, err := OpenCode(bin)
	if err != nil {
		t.Fatal(err)
	}
	consume, _ := symbolAddr(t, bin, "consume")
	m, ok := c.Clobbers(consume)
	if !ok || m&(1<<regRAX) == 0 {
		t.Fatalf("consume clobbers %#x, %v", m, ok)
	}
	for _, r := range []int{regRBX, regRBP, 8, 9, 10, 11, 12, 13, 14, 15} {
		if m&(1<<uint(r)) != 0 {
			t.Errorf("consume (a leaf) clobbers register %d: %#x", r, m)
		}
	}
	filter, _ := symbolAddr(t, bin, "filter")
	if fm, _ := c.Clobbers(filter + 1); fm&m != m {
		t.Errorf("filter calls consume but clobbers %#x, not all of consume's %#x", fm, m)
	}
	mainAddr, _ := symbolAddr(t, bin, "main")
	if mm, _ := c.Clobbers(mainAddr); mm&callerSavedMask&0xffff != callerSavedMask&0xffff {
		t.Errorf("main calls printf through the PLT but clobbers only %#x", mm)
	}
}

func hexs(x uint64) string { return fmt.Sprintf("%#x", x) }

// Reads: the functions whose machine code loads a global, at -O0 and -O2.
func TestReads(t *testing.T) {
	for _, opt := range []string{"-O0", "-O2"} {
		bin := buildSchema(t, opt)
		c, err := OpenCode(bin)
		if err != nil {
			t.Fatal(err)
		}
		over, _ := symbolAddr(t, bin, "over_limit")
		if r, known := c.Reads(over+1, "cfg.limit"); !known || !r {
			t.Errorf("%s: over_limit reads cfg.limit: %v, known %v", opt, r, known)
		}
		consume, _ := symbolAddr(t, bin, "consume")
		if r, known := c.Reads(consume, "cfg.limit"); !known || r {
			t.Errorf("%s: consume does not read cfg: %v, known %v", opt, r, known)
		}
		if _, known := c.Reads(consume, "no_such_global"); known {
			t.Errorf("%s: a global without a symbol is known", opt)
		}
		if _, known := c.Reads(1, "cfg"); known {
			t.Errorf("%s: an address outside every function is known", opt)
		}
	}
}

// Which functions store into a global, a function's static or a member,
// at -O0 and -O2: not those that only read it, whether by a load, a
// comparison or as the divisor of a division.
func TestWrites(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			bin := testutil.C(t, "statics"+level, []string{"statics.c"}, level, "-g")
			c := mustOpenCode(t, bin)
			for _, tc := range []struct {
				fn, global string
				writes     bool
			}{
				{"count_a", "seen", true},
				{"count_b", "seen", true},
				{"tally_a", "tally.a", true},
				{"read_a", "opts.a", false},
				{"per", "opts.b", false},
				{"main", "opts.b", false},
				{"plain", "opts.a", false},
			} {
				at, _ := symbolAddr(t, bin, tc.fn)
				if w, known := c.Writes(at+1, tc.global); !known || w != tc.writes {
					t.Errorf("%s writes %s: %v, known %v; want %v", tc.fn, tc.global, w, known, tc.writes)
				}
			}
			at, _ := symbolAddr(t, bin, "per")
			if r, known := c.Reads(at+1, "opts.b"); !known || !r {
				t.Errorf("per reads opts.b: %v, known %v", r, known)
			}
		})
	}
}

// Reads of a static variable declared inside a function (its symbol is
// "seen.N", looked up by the variable's name) and of a struct's members,
// a global's or a function's static's (placed by its symbol's address),
// at -O0 and -O2.
func TestReadsStaticAndMember(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			bin := testutil.C(t, "statics"+level, []string{"statics.c"}, level, "-g")
			c, err := OpenCode(bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				fn    string
				reads bool
			}{{"count_a", true}, {"count_b", true}, {"plain", false}} {
				at, _ := symbolAddr(t, bin, tc.fn)
				if r, known := c.Reads(at+1, "seen"); !known || r != tc.reads {
					t.Errorf("%s reads seen: %v, known %v; want %v", tc.fn, r, known, tc.reads)
				}
			}
			if _, known := c.Reads(1, "seen"); known {
				t.Error("an address outside every function is known")
			}
			// A member is read where its own bytes are, or where the
			// struct's address is taken.
			for _, tc := range []struct {
				fn, member string
				reads      bool
			}{
				{"read_a", "opts.a", true},
				{"read_a", "opts.b", false},
				{"share", "opts.a", true},
				{"share", "opts.b", true},
				{"main", "opts.b", true},
				{"plain", "opts.a", false},
				{"tally_a", "tally.a", true},
				{"tally_a", "tally.b", false},
				{"read_a", "tally.a", false},
			} {
				at, _ := symbolAddr(t, bin, tc.fn)
				if r, known := c.Reads(at+1, tc.member); !known || r != tc.reads {
					t.Errorf("%s reads %s: %v, known %v; want %v", tc.fn, tc.member, r, known, tc.reads)
				}
			}
		})
	}
}

func TestStaticBase(t *testing.T) {
	for _, tc := range []struct {
		sym, base string
		ok        bool
	}{
		{"current_db.1", "current_db", true},
		{"seen.12", "seen", true},
		{"seen", "", false},
		{"seen.", "", false},
		{".1", "", false},
		{"f.part.0", "f.part", true},
		{"seen.x1", "", false},
	} {
		b, ok := staticBase(tc.sym)
		if b != tc.base || ok != tc.ok {
			t.Errorf("staticBase(%q) = %q, %v; want %q, %v", tc.sym, b, ok, tc.base, tc.ok)
		}
	}
}
