package unwind

// Deps are what an unwind's chain depended on (UnwindDeps): besides the
// first frame's IP and SP, its BP when UsedBP, and the stack words in
// Words. An unwind from the same IP and SP (and BP when UsedBP) through
// the same objects, over a stack that holds the same values at Words,
// reads the same rules, computes the same CFAs and return addresses, and
// ends with the same chain: a caller that checks those words alone (a
// BPF program reading a handful of words where a copy would read
// kilobytes) may reuse the chain.
//
// The words are those a CFA or a return address came from: each frame's
// return address, and a saved register (rbp in practice) whose value a
// later frame's CFA rule or frame-pointer test used. The saved registers
// an unwind reads but never uses (rbx, r12-r15 of every frame that saves
// them) are left out: they change from call to call and decide nothing.
type Deps struct {
	UsedBP bool
	Words  []Word
	// Unsure says the unwind used something Deps do not follow: a DWARF
	// expression (it may read any word), a first-frame register other
	// than IP, SP and BP, or a return probe's trampoline. Its chain is
	// not to be reused.
	Unsure bool

	// reads and used are the tracker's scratch, kept here for the next
	// unwind: a caller reusing its Deps unwinds without allocating.
	reads []Word
	used  []bool
}

// Word is a stack word an unwind's chain depended on.
type Word struct{ Addr, Val uint64 }

// UnwindDeps is UnwindKnown that also says what the chain depended on
// (deps' storage is reused).
func UnwindDeps(buf []uint64, regs Regs, known uint32, stack StackCopy, r Resolver, max int, deps *Deps) (pcs []uint64, stop Stop, need Need) {
	deps.UsedBP, deps.Unsure, deps.Words = false, false, deps.Words[:0]
	return unwindKnown(buf, regs, known, stack, r, max, deps)
}

// Sources of a register's value while an unwind tracks its dependencies
// (unwinder.src): a value read from the stack is the index of its read.
const (
	srcFirst   = -1 // the first frame's register
	srcDerived = -2 // computed from a CFA, whose sources are already used
)

// depTracker follows where each register's value came from.
type depTracker struct {
	deps  *Deps
	src   [numRegs]int32
	reads []Word // the words read into registers, by index
	used  []bool // whether each read decided something
}

func (d *depTracker) reset(deps *Deps) {
	d.deps = deps
	for i := range d.src {
		d.src[i] = srcFirst
	}
	d.src[regRSP] = srcDerived // the key holds SP
	d.src[regRA] = srcDerived  // and IP
	d.reads, d.used = deps.reads[:0], deps.used[:0]
}

// use marks register reg's value as one the chain depends on.
func (d *depTracker) use(reg int) {
	if d == nil || d.deps == nil {
		return
	}
	switch s := d.src[reg]; {
	case s >= 0 && int(s) < len(d.used):
		d.used[s] = true
	case s == srcFirst && reg == regRBP:
		d.deps.UsedBP = true
	case s == srcFirst:
		d.deps.Unsure = true
	}
}

// read records a word read into a register; used says it decided
// something already (a return address).
func (d *depTracker) read(addr, val uint64, used bool) int32 {
	if d == nil || d.deps == nil {
		return srcDerived
	}
	d.reads = append(d.reads, Word{addr, val})
	d.used = append(d.used, used)
	return int32(len(d.reads) - 1)
}

// finish writes the words used into deps.
func (d *depTracker) finish() {
	if d == nil || d.deps == nil {
		return
	}
	for i, w := range d.reads {
		if d.used[i] {
			d.deps.Words = append(d.deps.Words, w)
		}
	}
	d.deps.reads, d.deps.used = d.reads, d.used
}
