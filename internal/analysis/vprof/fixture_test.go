package vprof

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// The tests write recordings with the real writer, for a real binary
// (testdata/targets/hier.c at -O2 -g: main → dispatch_1/dispatch_2 → worker),
// with user stacks and value PCs taken from its symbol table, so that Load
// symbolizes them as it would a real recording. The value streams are made
// up to follow the shapes of the vProf paper's Fig. 6 and the rules of §5.

const base = 0x555555554000 // where the executable is mapped

type elfFunc struct{ off, size uint64 }

type fixture struct {
	bin     string
	buildID []byte
	funcs   map[string]elfFunc
	size    uint64
}

var fixtureCache = map[bool]*fixture{}

// newFixture is the fixture program built -O2 -g.
func newFixture(t testing.TB) *fixture { return newFixtureDebug(t, true) }

// newFixtureDebug is the fixture program built -O2, with debug
// information (-g) or without.
func newFixtureDebug(t testing.TB, debug bool) *fixture {
	t.Helper()
	if fx := fixtureCache[debug]; fx != nil {
		return fx
	}
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	if !debug {
		bin = testutil.C(t, "hier-O2-nodebug", []string{"hier.c"}, "-O2")
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fx := &fixture{bin: bin, funcs: map[string]elfFunc{}}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 {
			continue
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && s.Value >= p.Vaddr && s.Value < p.Vaddr+p.Filesz {
				fx.funcs[s.Name] = elfFunc{off: s.Value - p.Vaddr + p.Off, size: s.Size}
			}
		}
	}
	for _, name := range []string{"main", "dispatch_1", "dispatch_2", "worker"} {
		if fx.funcs[name].size < 16 {
			t.Fatalf("%s: function %s missing or too small: %+v", bin, name, fx.funcs[name])
		}
	}
	if s := f.Section(".note.gnu.build-id"); s != nil {
		if d, err := s.Data(); err == nil && len(d) > 16 {
			namesz := binary.LittleEndian.Uint32(d[0:4])
			descsz := binary.LittleEndian.Uint32(d[4:8])
			start := 12 + (namesz+3)&^3
			if int(start+descsz) <= len(d) {
				fx.buildID = d[start : start+descsz]
			}
		}
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	fx.size = uint64(st.Size()+0xfff) &^ 0xfff
	fixtureCache[debug] = fx
	return fx
}

// in tells whether a file offset lies inside function name.
func (fx *fixture) in(name string, off uint64) bool {
	f := fx.funcs[name]
	return off >= f.off && off < f.off+f.size
}

// pc returns an address inside function name, k bytes after its start
// (clamped into the function).
func (fx *fixture) pc(name string, k uint64) uint64 {
	f := fx.funcs[name]
	if k >= f.size {
		k = f.size - 1
	}
	return base + f.off + k
}

// rec writes one recording.
type rec struct {
	t    testing.TB
	fx   *fixture
	w    *recording.Writer
	path string
	now  uint64
	id   uint32
	pid  uint32
	// schema is the schema identity its variables carry ("": none, as
	// recordings before format 1.4).
	schema string
}

func (fx *fixture) create(t testing.TB, name string) *rec {
	return fx.createAt(t, name, 1_000_000_000, 0)
}

// createAt starts a recording whose sample clock reads now (ns) at its
// start, and the wall clock unixNano then (0: the recording does not say).
func (fx *fixture) createAt(t testing.TB, name string, now uint64, unixNano int64) *rec {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	r := &rec{t: t, fx: fx, w: w, path: path, now: now, pid: 4242}
	m := &recording.Meta{Tool: "culprit test", Command: []string{fx.bin}, Event: "cpu-clock", Frequency: 1000, CallGraph: "fp"}
	if unixNano > 0 {
		m.StartUnixNano, m.StartClock = unixNano, now
	}
	r.write(m)
	r.write(&recording.Comm{Time: r.now, PID: r.pid, TID: r.pid, Exec: true, Name: "hier"})
	r.write(&recording.Mmap{Time: r.now, PID: r.pid, TID: r.pid, Start: base, Len: fx.size, Pgoff: 0,
		Prot: 5, BuildID: fx.buildID, Path: fx.bin})
	return r
}

func (r *rec) write(x recording.Record) {
	r.t.Helper()
	if err := r.w.Write(x); err != nil {
		r.t.Fatal(err)
	}
}

// variable defines a variable declared at line 10; tags as in the schema
// ("loop,cond", "none").
func (r *rec) variable(name, function, typ, tags string, pointer bool) uint32 {
	return r.variableAt(name, function, typ, tags, 10, pointer)
}

func (r *rec) variableAt(name, function, typ, tags string, line int, pointer bool) uint32 {
	r.id++
	r.write(&recording.ValueSource{ID: r.id, Class: recording.SourceVariable, Name: name, Function: function,
		File: "hier.c", Line: line, Type: typ, Tags: tags, Global: function == "#global", Pointer: pointer, Schema: r.schema})
	return r.id
}

// val is one value of a tick: the variable, the frame depth it was read in,
// and the value.
type val struct {
	src   uint32
	depth uint8
	v     int64
}

// tick writes one 1 ms CPU sample of thread tid whose user stack is stack
// (function names, innermost first; the leaf at +off bytes into its
// function, callers at fixed return addresses), and its values.
func (r *rec) tick(tid uint32, stack []string, off uint64, vals ...val) {
	r.t.Helper()
	r.now += 1_000_000
	user := make([]uint64, len(stack))
	for i, fn := range stack {
		if i == 0 {
			user[i] = r.fx.pc(fn, 4+off)
		} else {
			user[i] = r.fx.pc(fn, 9) // a return address: looked up at −1
		}
	}
	if err := r.w.WriteSample(recording.Sample{Time: r.now, PID: r.pid, TID: tid, Period: 1_000_000}, nil, user); err != nil {
		r.t.Fatal(err)
	}
	for _, v := range vals {
		pc := uint64(0)
		if int(v.depth) < len(user) {
			pc = user[v.depth]
		}
		r.write(&recording.Value{Time: r.now, PID: r.pid, TID: tid, Source: v.src, Depth: v.depth,
			Type: recording.ValueInt, PC: pc, Bits: uint64(v.v)})
	}
}

// done closes the recording and loads it.
func (r *rec) done() *profile.Profile {
	r.t.Helper()
	r.write(&recording.End{Time: r.now})
	if err := r.w.Close(); err != nil {
		r.t.Fatal(err)
	}
	p, err := loader.Load([]string{r.path}, loader.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// analyze runs the analysis with default options.
func analyze(t testing.TB, normal, buggy []*profile.Profile) *Result {
	t.Helper()
	return analyzeWith(t, paperOptions(), normal, buggy)
}

// analyzeWith runs the analysis with options o.
func analyzeWith(t testing.TB, o Options, normal, buggy []*profile.Profile) *Result {
	t.Helper()
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range normal {
		if err := a.AddNormal(p, Run{Path: "normal" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range buggy {
		if err := a.AddBuggy(p, Run{Path: "buggy" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (r *Result) fn(t testing.TB, name string) FunctionResult {
	t.Helper()
	for _, f := range r.Functions {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no function %s in %v", name, r.names())
	return FunctionResult{}
}

func (r *Result) variable(t testing.TB, name string) *VariableResult {
	t.Helper()
	for _, v := range r.Variables {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no variable %s", name)
	return nil
}

func (r *Result) names() []string {
	var out []string
	for _, f := range r.Functions {
		out = append(out, f.Name)
	}
	return out
}

// lcg is a small deterministic generator.
type lcg uint64

func (g *lcg) next() uint64 {
	*g = *g*6364136223846793005 + 1442695040888963407
	return uint64(*g) >> 33
}

// intn returns a value in [0, n).
func (g *lcg) intn(n int64) int64 { return int64(g.next() % uint64(n)) }

// paperOptions are DefaultOptions with vProf's own ranking, which most
// tests here check.
func paperOptions() Options {
	o := DefaultOptions()
	o.Method = MethodVprof
	return o
}

// guardIn is a GuardFunc for which f's calls of callee are guarded,
// ordered and known as given, and nothing else is known.
func guardIn(f elfFunc, callee string, guarded, ordered, known bool) GuardFunc {
	return func(_ string, off uint64, c string) (bool, bool, bool) {
		if off >= f.off && off < f.off+f.size && c == callee {
			return guarded, ordered, known
		}
		return false, false, false
	}
}
