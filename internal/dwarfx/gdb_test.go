package dwarfx

// Values of every variable in scope at many stops of testdata/targets/
// values.c, evaluated by this package in a ptrace stop, compared with what
// gdb prints at the same PCs of a second, identical run (both without
// ASLR, with the same environment; the program is deterministic).

import (
	"bufio"
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

const gdbScript = `
import gdb, json
ADDRS = %s
LIMIT = %d
ANCHOR = %q
ANCHOR_VADDR = %d
PRESTOP = %s
GPC = %d
GLOBALS = %s
out = open(%q, "w")
for c in ["set pagination off", "set confirm off", "set print repeats unlimited",
          "set print symbol off", "set startup-with-shell off",
          "unset environment LINES", "unset environment COLUMNS"]:
    gdb.execute(c)
gdb.execute("starti", to_string=True)
if PRESTOP:
    gdb.execute("tbreak main", to_string=True)
    gdb.execute("continue", to_string=True)
bias = int(gdb.parse_and_eval("(long)&" + ANCHOR)) - ANCHOR_VADDR
bps = {}
for a in ADDRS:
    b = gdb.Breakpoint("*0x%%x" %% (a + bias), internal=True)
    b.silent = True
    bps[a] = [b, 0]
CONSTS = (gdb.SYMBOL_LOC_CONST, gdb.SYMBOL_LOC_CONST_BYTES)

def real_frame(f):
    while f is not None and f.type() == gdb.INLINE_FRAME:
        f = f.older()
    return f

def vars_at(frame, lookup):
    real = real_frame(frame)
    res = []
    b = gdb.block_for_pc(lookup)
    inst = 0
    seen = set()
    while b is not None and not b.is_static and not b.is_global:
        for sym in b:
            if not (sym.is_argument or sym.is_variable or sym.addr_class in CONSTS):
                continue
            if (inst, sym.name) in seen:
                continue
            seen.add((inst, sym.name))
            try:
                s = str(sym.value(real))
            except Exception as e:
                s = "<error: %%s>" %% e
            res.append([inst, sym.name, s])
        if b.function is not None:
            inst += 1
        b = b.superblock
    return res

while True:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    inf = gdb.selected_inferior()
    if inf.pid == 0:
        break
    f0 = gdb.newest_frame()
    pc = f0.pc()
    a = pc - bias
    if a not in bps:
        continue
    rec = {"pc": a, "rsp": int(f0.read_register("rsp")), "frames": [vars_at(f0, pc)]}
    f1 = real_frame(f0).older()
    if f1 is not None and 0 <= f1.pc() - 1 - bias < (1 << 40):
        rec["pc1"] = f1.pc() - 1 - bias
        rec["frames"].append(vars_at(f1, f1.pc() - 1))
    if a == GPC:
        g = []
        for name in GLOBALS:
            try:
                g.append([name, str(gdb.parse_and_eval(name))])
            except Exception as e:
                g.append([name, "<error: %%s>" %% e])
        rec["globals"] = g
    out.write(json.dumps(rec) + "\n")
    bps[a][1] += 1
    if bps[a][1] >= LIMIT:
        bps[a][0].enabled = False
out.close()
`

type gdbStop struct {
	PC      uint64          `json:"pc"`
	PC1     uint64          `json:"pc1"`
	RSP     uint64          `json:"rsp"`
	Frames  [][]gdbVar      `json:"frames"`
	Globals [][2]string     `json:"globals"`
	Raw     json.RawMessage `json:"-"`
}

type gdbVar struct {
	Inst int
	Name string
	Val  string
}

func (v *gdbVar) UnmarshalJSON(b []byte) error {
	var a []any
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if len(a) != 3 {
		return fmt.Errorf("bad var %s", b)
	}
	v.Inst = int(a[0].(float64))
	v.Name, _ = a[1].(string)
	v.Val, _ = a[2].(string)
	return nil
}

// runGDB stops bin at addrs of tg.obj (at most limit times each) and
// returns what gdb printed for the variables in scope in frames 0 and 1,
// and for the globals at gpc.
func runGDB(t *testing.T, tg target, addrs []uint64, limit int, anchorVaddr, gpc uint64, globals []string) []gdbStop {
	t.Helper()
	dir := t.TempDir()
	outPath := filepath.Join(dir, "stops.json")
	as := make([]string, len(addrs))
	for k, a := range addrs {
		as[k] = fmt.Sprint(a)
	}
	if globals == nil {
		globals = []string{}
	}
	gs, _ := json.Marshal(globals)
	prestop := "False"
	if tg.obj != "" {
		prestop = "True"
	}
	script := fmt.Sprintf(gdbScript, "["+strings.Join(as, ",")+"]", limit, tg.anchor, anchorVaddr, prestop, gpc, gs, outPath)
	sp := filepath.Join(dir, "stops.py")
	if err := os.WriteFile(sp, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("gdb", "-nx", "-batch", "-x", sp, tg.bin)
	cmd.Env = testEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	b, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatalf("gdb wrote nothing: %v\n%s", err, out)
	}
	var stops []gdbStop
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var s gdbStop
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("gdb output: %v: %s", err, sc.Text())
		}
		stops = append(stops, s)
	}
	return stops
}

// stmtAddrs returns the is_stmt line-table addresses inside the functions
// of the units named like one of srcs, and the entry PCs of those
// functions.
func stmtAddrs(t *testing.T, bin string, srcs []string, info *Info) []uint64 {
	match := func(name string) bool {
		for _, s := range srcs {
			if strings.HasSuffix(name, s) {
				return true
			}
		}
		return false
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	set := map[uint64]bool{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if !match(name) {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(e)
		if err != nil {
			t.Fatal(err)
		}
		var le dwarf.LineEntry
		for lr.Next(&le) == nil {
			if le.IsStmt && !le.EndSequence {
				if _, ok := info.Function(le.Address); ok {
					set[le.Address] = true
				}
			}
		}
		r.SkipChildren()
	}
	for _, fn := range info.Functions() {
		if match(fn.Unit) {
			set[fn.Entry] = true
		}
	}
	var out []uint64
	for a := range set {
		out = append(out, a)
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

type myVar struct {
	inst int
	name string
	val  string
	err  error
	v    *Variable
	loc  Location
}

// evalAll evaluates every variable in scope at pc (an ELF address) in f.
func evalAll(info *Info, f *Frame, pc uint64) []myVar {
	fn, ok := info.Function(pc)
	if !ok {
		return nil
	}
	inls := fn.Inlines(pc)
	var out []myVar
	for _, v := range fn.Variables(pc) {
		inst := len(inls)
		for k, in := range inls {
			if v.Inline == in {
				inst = k
			}
		}
		mv := myVar{inst: inst, name: v.Name, v: v}
		mv.loc, _ = v.Location(pc)
		val, err := v.Read(pc, f)
		if err != nil {
			mv.err = err
		} else {
			mv.val = v.Type().FormatValue(val)
		}
		out = append(out, mv)
	}
	return out
}

var (
	reSym = regexp.MustCompile(`(0x[0-9a-f]+) <[^>]*>`)
	reStr = regexp.MustCompile(`(0x[0-9a-f]+) "(?:[^"\\]|\\.)*"(?:\.\.\.)?`)
)

var reOptOut = regexp.MustCompile(`<optimized out>|[A-Za-z_][A-Za-z_0-9]* = |[{}, ]`)

// allOptimizedOut reports whether gdb printed a value with nothing
// available: <optimized out>, or an aggregate of only such members.
func allOptimizedOut(s string) bool {
	return strings.Contains(s, "<optimized out>") && reOptOut.ReplaceAllString(s, "") == ""
}

// normGDB removes what Format cannot know: symbols after function
// pointers and strings after char pointers.
func normGDB(s string) string {
	s = reSym.ReplaceAllString(s, "$1")
	return reStr.ReplaceAllString(s, "$1")
}

type tally struct {
	stops, frames1          int
	match, matchList        int
	matchPieces, matchConst int
	matchInline             int
	matchClone              int // factor of scaled (a constant in the -O2 clone)
	bias                    uint64
	bothUnavail             int
	entryGDB                int // entry value: gdb used call-site info, we refuse to guess
	implicitPtr             int
	callerSaved             int // caller frame, caller-saved register: gdb assumes it unchanged
	globals                 int
	mismatch                int
	scope                   int
	details                 []string
}

func (c *tally) String() string {
	return fmt.Sprintf("stops %d (caller frames %d): %d values equal to gdb's (%d from location lists, %d with pieces, %d constants, %d of inlined calls), "+
		"%d unavailable on both sides, %d entry values gdb recovered from call sites (refused here), %d implicit pointers, "+
		"%d caller-frame values in caller-saved registers gdb assumed unchanged (unknown here), %d globals equal; %d mismatches, %d scope differences",
		c.stops, c.frames1, c.match, c.matchList, c.matchPieces, c.matchConst, c.matchInline, c.bothUnavail, c.entryGDB, c.implicitPtr,
		c.callerSaved, c.globals, c.mismatch, c.scope)
}

func (c *tally) fail(format string, args ...any) {
	if len(c.details) < 40 {
		c.details = append(c.details, fmt.Sprintf(format, args...))
	}
}

func compareFrame(c *tally, where string, caller bool, gv []gdbVar, mv []myVar) {
	type key struct {
		inst int
		name string
	}
	mine := map[key]myVar{}
	for _, v := range mv {
		mine[key{v.inst, v.name}] = v
	}
	seen := map[key]bool{}
	for _, g := range gv {
		k := key{g.Inst, g.Name}
		seen[k] = true
		m, ok := mine[k]
		if !ok {
			c.scope++
			c.fail("%s: gdb has %s (instance %d) = %s, not in Variables", where, g.Name, g.Inst, g.Val)
			continue
		}
		gval := normGDB(g.Val)
		switch {
		case m.err == nil && gval == m.val:
			c.match++
			if m.v.HasLocationList() {
				c.matchList++
			}
			if bytes.Contains(m.loc.Expr, []byte{elfx.OpPiece}) && strings.Contains(Disassemble(m.loc.Expr), "piece") {
				c.matchPieces++
			}
			if m.loc.Const != nil {
				c.matchConst++
			}
			if m.v.Inline != nil {
				c.matchInline++
			}
			if m.v.Func != nil && m.v.Func.Name == "scaled" && m.name == "factor" {
				c.matchClone++
			}
		case m.err != nil && errors.Is(m.err, ErrRegUnknown) && caller && !allOptimizedOut(gval):
			c.callerSaved++
		case m.err != nil && errors.Is(m.err, ErrImplicitPointer) && strings.Contains(gval, "<synthetic pointer>"):
			c.implicitPtr++
		case m.err != nil && errors.Is(m.err, ErrUnavailable) && !errors.Is(m.err, ErrEntryValue) && allOptimizedOut(gval):
			c.bothUnavail++
		case m.err != nil && errors.Is(m.err, ErrEntryValue):
			if allOptimizedOut(gval) {
				c.bothUnavail++
			} else {
				c.entryGDB++
			}
		default:
			c.mismatch++
			got := m.val
			if m.err != nil {
				got = "error: " + m.err.Error()
			}
			c.fail("%s: %s (instance %d, %s): gdb %q, dwarfx %q", where, g.Name, g.Inst, m.loc, g.Val, got)
		}
	}
	for k, m := range mine {
		if !seen[k] {
			c.scope++
			c.fail("%s: Variables has %s (instance %d), gdb does not", where, m.name, m.inst)
		}
	}
}

type variant struct {
	name  string
	flags []string
}

var variants = []variant{
	{"O0", []string{"-O0", "-g"}},
	{"O2", []string{"-O2", "-g"}},
	{"O2-dwarf4", []string{"-O2", "-gdwarf-4"}},
	{"O1", []string{"-O1", "-g"}},
}

func needGDB(t *testing.T) {
	t.Helper()
	testutil.NeedTool(t, "gdb")
	testutil.NeedTool(t, "readelf")
}

// TestMatchesGDB is the oracle test: every variable in scope in frames 0
// and 1 at every is_stmt address of values.c (twice each), and all
// globals, evaluated from ptrace stops and compared with gdb's print.
func TestMatchesGDB(t *testing.T) {
	needGDB(t)
	for _, vr := range variants {
		t.Run(vr.name, func(t *testing.T) {
			bin := testutil.C(t, "values-"+vr.name, []string{"values.c"}, vr.flags...)
			c := compareWithGDB(t, target{bin: bin, units: []string{"values.c"}, anchor: "main", globalsAt: "process"}, 2)
			t.Logf("%s: %s", vr.name, c)
			for _, d := range c.details {
				t.Errorf("%s", d)
			}
			if c.match < 100 {
				t.Errorf("only %d values compared equal", c.match)
			}
			if vr.name != "O0" && (c.matchList == 0 || c.matchPieces == 0 || c.matchConst == 0) {
				t.Errorf("no location-list, piece or constant value compared")
			}
			if c.matchInline == 0 || c.matchClone == 0 || c.frames1 == 0 || c.globals == 0 {
				t.Errorf("no inlined, clone, caller-frame or global value compared")
			}
			if c.bias == 0 {
				t.Errorf("not a PIE: globals were read without a bias")
			}
		})
	}
}

// TestMatchesGDBLibc compares inside glibc (-O2, DWARF 5 from its separate
// debug file): qsort's merge sort and strtol, called by valueslib.c.
func TestMatchesGDBLibc(t *testing.T) {
	needGDB(t)
	openLibc(t)
	bin := testutil.C(t, "valueslib", []string{"valueslib.c"}, "-O2", "-g")
	c := compareWithGDB(t, target{bin: bin, obj: libcPath, units: []string{"msort.c", "strtol_l.c"}, anchor: "__qsort_r"}, 2)
	t.Logf("libc: %s", c)
	for _, d := range c.details {
		t.Errorf("%s", d)
	}
	if c.match < 100 || c.matchList == 0 {
		t.Errorf("only %d values compared equal, %d from location lists", c.match, c.matchList)
	}
}

// target says what to run and where to stop: the is_stmt addresses of
// units of obj (bin itself when empty).
type target struct {
	bin, obj  string
	units     []string
	anchor    string // a function of obj whose address gives its bias under gdb
	globalsAt string // compare all globals at the entry of this function
}

func compareWithGDB(t *testing.T, tg target, limit int) *tally {
	obj := tg.obj
	if obj == "" {
		obj = tg.bin
	}
	info, err := Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	addrs := stmtAddrs(t, info.Path(), tg.units, info)
	anchors := info.FunctionsNamed(tg.anchor)
	if len(anchors) != 1 {
		t.Fatalf("%s: %v", tg.anchor, anchors)
	}
	var gpc uint64
	var globals []string
	var gvars []*Variable
	if tg.globalsAt != "" {
		fs := info.FunctionsNamed(tg.globalsAt)
		if len(fs) != 1 {
			t.Fatalf("%s: %v", tg.globalsAt, fs)
		}
		gpc = fs[0].Entry
		for _, g := range info.Globals() {
			name := g.Name
			if g.Func != nil {
				name = "'" + g.Func.Name + "'::" + g.Name
			}
			globals = append(globals, name)
			gvars = append(gvars, g)
		}
	}
	gstops := runGDB(t, tg, addrs, limit, anchors[0].Entry, gpc, globals)
	cfi := loadCFI(t, obj)

	c := &tally{}
	k := 0
	out := runStops(t, tg.bin, tg.obj, addrs, limit, func(pc uint64, s *ptraceStop) {
		defer func() { k++ }()
		if k >= len(gstops) {
			c.fail("stop %d at %#x: gdb stopped only %d times", k, pc, len(gstops))
			return
		}
		g := gstops[k]
		if g.PC != pc {
			c.fail("stop %d: gdb at %#x, ptrace at %#x", k, g.PC, pc)
			return
		}
		if g.RSP != s.f0.Regs[RegRSP] {
			c.fail("stop %d at %#x: rsp %#x under gdb, %#x here: runs differ", k, pc, g.RSP, s.f0.Regs[RegRSP])
			return
		}
		c.stops++
		c.bias = s.bias
		f1, pc1, ok := cfi.frames(s.f0, s.bias, s.read)
		compareFrame(c, fmt.Sprintf("stop %d pc %#x", k, pc), false, g.Frames[0], evalAll(info, s.f0, pc))
		// Frame 1 is compared when both sides agree on the caller: gdb
		// shows a function that tail-called frame 0 as a synthetic frame
		// (from DW_AT_call_tail_call), CFI shows the real caller.
		if ok && len(g.Frames) > 1 && g.PC1 == pc1 {
			if _, isFn := info.Function(pc1); isFn {
				c.frames1++
				compareFrame(c, fmt.Sprintf("stop %d pc %#x caller %#x", k, pc, pc1), true, g.Frames[1], evalAll(info, f1, pc1))
			}
		}
		if len(g.Globals) > 0 {
			// Globals need only the bias and memory.
			gf := &Frame{Bias: s.bias, Mem: s.read}
			for n, gv := range g.Globals {
				v := gvars[n]
				val, err := v.Read(pc, gf)
				got := ""
				if err != nil {
					got = "error: " + err.Error()
				} else {
					got = v.Type().FormatValue(val)
				}
				if normGDB(gv[1]) == got {
					c.globals++
				} else {
					c.mismatch++
					c.fail("global %s: gdb %q, dwarfx %q", gv[0], gv[1], got)
				}
			}
		}
	})
	if k != len(gstops) {
		t.Errorf("ptrace stopped %d times, gdb %d", k, len(gstops))
	}
	if !strings.Contains(out, "total ") {
		t.Errorf("program output %q", out)
	}
	if len(gstops) == 0 {
		t.Errorf("no stops")
	}
	return c
}
