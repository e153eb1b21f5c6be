package schema

import (
	"debug/elf"
	"slices"
	"sync"

	"github.com/culprit-dev/culprit/internal/dwarfx"

	"golang.org/x/arch/x86/x86asm"
)

// Compare is one conditional use of a local by its function's code: a
// conditional jump, cmov or set whose flags come from comparing the
// variable plus Add with the constant Const (`cmp reg, imm`, or `test
// reg, reg` against 0), in an operand of Bits bits. Cond is the x86
// condition: E, NE, L, LE, G, GE (signed), B, BE, A, AE (unsigned), S, NS.
type Compare struct {
	Cond       string
	Add, Const int64
	Bits       int
}

// Comparisons are the conditional uses of one local: those against a
// constant (Known) and whether any other use was seen (Unknown: a
// comparison with another variable or a computed value, flags from
// arithmetic, a condition not listed in Compare).
type Comparisons struct {
	Known   []Compare
	Unknown bool
}

// Outcomes returns the direction each known comparison takes for the
// value x of the variable, one bit per comparison; ok is false when a
// use is unknown (the value may decide something else there) or there
// are more than 64.
func (c Comparisons) Outcomes(x int64) (bits uint64, ok bool) {
	if c.Unknown || len(c.Known) == 0 || len(c.Known) > 64 {
		return 0, false
	}
	for i, k := range c.Known {
		t, ok := k.taken(x)
		if !ok {
			return 0, false
		}
		if t {
			bits |= 1 << i
		}
	}
	return bits, true
}

func (k Compare) taken(x int64) (bool, bool) {
	if k.Bits <= 0 || k.Bits > 64 {
		return false, false
	}
	mask := ^uint64(0)
	if k.Bits < 64 {
		mask = 1<<k.Bits - 1
	}
	u, c := uint64(x+k.Add)&mask, uint64(k.Const)&mask
	sext := func(v uint64) int64 { return int64(v<<(64-k.Bits)) >> (64 - k.Bits) }
	su, sc := sext(u), sext(c)
	switch k.Cond {
	case "E":
		return u == c, true
	case "NE":
		return u != c, true
	case "L":
		return su < sc, true
	case "GE":
		return su >= sc, true
	case "LE":
		return su <= sc, true
	case "G":
		return su > sc, true
	case "B":
		return u < c, true
	case "AE":
		return u >= c, true
	case "BE":
		return u <= c, true
	case "A":
		return u > c, true
	case "S":
		return sext((u-c)&mask) < 0, true
	case "NS":
		return sext((u-c)&mask) >= 0, true
	}
	return false, false
}

func (c *Comparisons) add(k Compare) {
	if !slices.Contains(c.Known, k) {
		c.Known = append(c.Known, k)
	}
}

func (c *Comparisons) merge(o *Comparisons) {
	for _, k := range o.Known {
		c.add(k)
	}
	c.Unknown = c.Unknown || o.Unknown
}

// flagCmp is what the last flag-setting instruction compared, when it
// compared one local (plus add) with a constant.
type flagCmp struct {
	v      int32
	add, c int64
	bits   int
}

// constCmp returns the comparison instruction i makes of one local with a
// constant, or nil.
func (fa *fnAnalysis) constCmp(i int) *flagCmp {
	inst := &fa.code.insns[i].inst
	if nargs(inst) != 2 {
		return nil
	}
	var c int64
	switch inst.Op {
	case x86asm.CMP:
		imm, ok := inst.Args[1].(x86asm.Imm)
		if !ok {
			return nil
		}
		c = int64(imm)
	case x86asm.TEST:
		if r, ok := inst.Args[0].(x86asm.Reg); !ok || inst.Args[1] != r {
			return nil
		}
	default:
		return nil
	}
	vs, aff := fa.read(i, inst.Args[0])
	if !aff.ok || aff.v < fa.nglob || len(vs) != 1 || vs[0] != aff.v {
		return nil
	}
	bits := argBits(inst, inst.Args[0])
	if bits == 0 {
		return nil
	}
	return &flagCmp{v: aff.v, add: aff.d, c: c, bits: bits}
}

func argBits(inst *x86asm.Inst, a x86asm.Arg) int {
	switch r := a.(type) {
	case x86asm.Reg:
		switch {
		case r >= x86asm.AL && r <= x86asm.R15B:
			return 8
		case r >= x86asm.AX && r <= x86asm.R15W:
			return 16
		case r >= x86asm.EAX && r <= x86asm.R15L:
			return 32
		case r >= x86asm.RAX && r <= x86asm.R15:
			return 64
		}
	case x86asm.Mem:
		return inst.MemBytes * 8
	}
	return 0
}

var knownConds = map[string]bool{"E": true, "NE": true, "L": true, "LE": true, "G": true, "GE": true,
	"B": true, "BE": true, "A": true, "AE": true, "S": true, "NS": true}

// compared records a use of the flags under condition cond (a jump's,
// cmov's or set's suffix).
func (fa *fnAnalysis) compared(cond string) {
	if fa.cmps == nil {
		return
	}
	for _, v := range fa.flags {
		if v < fa.nglob {
			continue
		}
		c := fa.cmps[v]
		if c == nil {
			c = &Comparisons{}
			fa.cmps[v] = c
		}
		if fa.cmp != nil && fa.cmp.v == v && knownConds[cond] {
			c.add(Compare{Cond: cond, Add: fa.cmp.add, Const: fa.cmp.c, Bits: fa.cmp.bits})
		} else {
			c.Unknown = true
		}
	}
}

// Compared returns how the code of the binary at path compares its
// locals: for each local one of whose values a conditional jump, cmov or
// set uses (a `cond` variable of the schema), its comparisons with
// constants and whether it has others. It analyses every function as
// Generate does; a Comparer analyses only the functions asked about.
func Compared(path string) (map[Key]Comparisons, error) {
	c, err := NewComparer(path)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.byName {
		c.analyse(name)
	}
	out := make(map[Key]Comparisons, len(c.g.compares))
	for k, x := range c.g.compares {
		out[k] = *x
	}
	return out, nil
}

// A Comparer tells how the code of one binary compares its locals
// (Compared), analysing a function the first time one of its locals is
// asked about: a diagnosis asks about a few functions of a large program,
// whose every function's analysis takes seconds.
type Comparer struct {
	mu     sync.Mutex
	f      *elf.File
	g      *generator
	byName map[string][]*dwarfx.Function
	done   map[string]bool
}

// NewComparer reads the binary at path's DWARF and code.
func NewComparer(path string) (*Comparer, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	g, err := newGenerator(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	g.compares = map[Key]*Comparisons{}
	c := &Comparer{f: f, g: g, byName: map[string][]*dwarfx.Function{}, done: map[string]bool{}}
	for _, fn := range g.info.Functions() {
		if len(fn.Ranges) == 0 || g.own != nil && fn.IsGo() && (!g.own(fn.Unit) || fn.DeclFile == "<autogenerated>") {
			continue
		}
		c.byName[fn.Name] = append(c.byName[fn.Name], fn)
	}
	return c, nil
}

// Of returns the comparisons of the local k names; false when its
// function's code does not use it in a condition.
func (c *Comparer) Of(k Key) (Comparisons, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.analyse(k.Function)
	x, ok := c.g.compares[k]
	if !ok {
		return Comparisons{}, false
	}
	return *x, true
}

// analyse analyses every function named name (a function's clones are
// one, their comparisons merged), once.
func (c *Comparer) analyse(name string) {
	if c.done[name] {
		return
	}
	c.done[name] = true
	for _, fn := range c.byName[name] {
		c.g.analyse(fn)
	}
}

// Close releases the binary.
func (c *Comparer) Close() error { return c.f.Close() }
