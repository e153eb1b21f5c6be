package symbol

import (
	"encoding/binary"
	"os"

	"golang.org/x/arch/x86/x86asm"
)

// MaxTailCalls is the longest chain of tail calls TailCalls recovers.
const MaxTailCalls = 3

// TailCalls recovers the frames a tail call removed from a stack. retOff is
// the file offset of a return address (a caller frame's PC), innerOff that
// of the PC of the frame below it, both in this object. When the instruction
// before the return address is a direct call of a function F other than the
// one holding innerOff, and F reaches that function through a chain of at
// most MaxTailCalls direct jumps to other functions' entries (F jumps to G,
// G to H, ...: GCC's tail calls at -O2), the frames of F, G, ... were
// replaced by their tail callees' and are missing from the stack.
// TailCalls returns the file offsets of those jump instructions, the
// innermost first (H's jump before G's before F's), each standing for its
// function's frame; nil when there is nothing to recover or no chain of
// jumps explains the gap. Calls through pointers or the PLT, and functions
// whose code has no symbol with a size, are not followed.
func (o *Object) TailCalls(retOff, innerOff uint64) []uint64 {
	d := o.d
	ret, ok1 := d.vaddr(retOff)
	inner, ok2 := d.vaddr(innerOff)
	if !ok1 || !ok2 || ret < 5 {
		return nil
	}
	d.load()
	target, ok := d.callTarget(ret)
	if !ok {
		return nil
	}
	if e, ok := d.ownStub(target); ok {
		// A call through the object's own PLT stub of a function it
		// defines (a shared library calls its exported functions so).
		target = e
	}
	return d.chainTo(target, inner)
}

// StubCall names the function reached by the PLT stub that the direct
// call ending right before file offset retOff calls: the function a call
// into another object went to. ok is false when the instruction there is
// no call of a PLT stub.
func (o *Object) StubCall(retOff uint64) (name string, ok bool) {
	d := o.d
	ret, ok := d.vaddr(retOff)
	if !ok || ret < 5 {
		return "", false
	}
	d.load()
	target, ok := d.callTarget(ret)
	if !ok {
		return "", false
	}
	return d.syms.stub(target)
}

// TailCallsFrom is TailCalls for a call that entered this object at the
// function named entry (through another object's PLT stub, StubCall):
// the file offsets of the jumps by which entry and the functions it
// jumped to reached the function holding innerOff, innermost first; nil
// when entry is that function or no chain of jumps explains the gap.
func (o *Object) TailCallsFrom(entry string, innerOff uint64) []uint64 {
	d := o.d
	inner, ok := d.vaddr(innerOff)
	if !ok {
		return nil
	}
	d.load()
	target, ok := d.entryOf(entry)
	if !ok {
		return nil
	}
	return d.chainTo(target, inner)
}

// chainTo is TailCalls for a call of the function at target, with inner
// the PC of the frame below it.
func (d *objData) chainTo(target, inner uint64) []uint64 {
	innerStart, _, ok := d.syms.bounds(inner)
	if !ok || innerStart == target {
		return nil
	}
	key := [2]uint64{target, innerStart}
	d.tailMu.Lock()
	chain, ok := d.chains[key]
	d.tailMu.Unlock()
	if !ok {
		chain = d.tailChain(target, innerStart, inner)
		d.tailMu.Lock()
		if d.chains == nil {
			d.chains = map[[2]uint64][]uint64{}
		}
		d.chains[key] = chain
		d.tailMu.Unlock()
	}
	return append([]uint64(nil), chain...)
}

// tailChain is TailCalls for the call of target, with inner (in the
// function at innerStart) the PC below.
func (d *objData) tailChain(target, innerStart, inner uint64) []uint64 {
	if start, _, ok := d.syms.bounds(target); !ok || start != target {
		return nil
	}
	// A function split in parts (GCC's .cold blocks) is one source
	// function: a jump to its other part is no tail call.
	if sameFunction(d.lookupPC(target), d.lookupPC(inner)) {
		return nil
	}
	// Breadth first over the functions' tail jumps, so the shortest chain
	// wins.
	type step struct {
		fn   uint64   // entry of the function reached
		jmps []uint64 // the jumps that led here, outermost first
	}
	queue := []step{{fn: target}}
	seen := map[uint64]bool{target: true}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if len(s.jmps) >= MaxTailCalls {
			continue
		}
		for _, j := range d.tailJumps(s.fn) {
			if j.to == innerStart {
				jmps := append(append([]uint64(nil), s.jmps...), j.at)
				out := make([]uint64, 0, len(jmps))
				for i := len(jmps) - 1; i >= 0; i-- {
					off, ok := d.fileOffset(jmps[i])
					if !ok {
						return nil
					}
					out = append(out, off)
				}
				return out
			}
			if !seen[j.to] {
				seen[j.to] = true
				queue = append(queue, step{fn: j.to, jmps: append(append([]uint64(nil), s.jmps...), j.at)})
			}
		}
	}
	return nil
}

// sameFunction reports whether two addresses' outermost frames name one
// source function.
func sameFunction(a, b []Frame) bool {
	return len(a) > 0 && len(b) > 0 && a[len(a)-1].Function != "" && a[len(a)-1].Function == b[len(b)-1].Function
}

// callTarget returns the target of the direct call (e8 rel32) that ends
// right before the virtual address ret.
func (d *objData) callTarget(ret uint64) (uint64, bool) {
	d.tailMu.Lock()
	t, ok := d.calls[ret]
	d.tailMu.Unlock()
	if ok {
		return t, t != 0
	}
	if off, ok := d.fileOffset(ret - 5); ok {
		if b, ok := d.readCode(off, 5); ok && b[0] == 0xe8 {
			t = ret + uint64(int64(int32(binary.LittleEndian.Uint32(b[1:]))))
		}
	}
	d.tailMu.Lock()
	if d.calls == nil {
		d.calls = map[uint64]uint64{}
	}
	d.calls[ret] = t
	d.tailMu.Unlock()
	return t, t != 0
}

// readCode reads n bytes at file offset off.
func (d *objData) readCode(off uint64, n int) ([]byte, bool) {
	if d.standIn {
		return nil, false
	}
	b := make([]byte, n)
	if d.data != nil {
		if off+uint64(n) > uint64(len(d.data)) {
			return nil, false
		}
		copy(b, d.data[off:])
		return b, true
	}
	f, err := os.Open(d.path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if _, err := f.ReadAt(b, int64(off)); err != nil {
		return nil, false
	}
	return b, true
}

// tailJump is a direct jump from one function to another's entry.
type tailJump struct {
	at, to uint64 // the jump's address, its target (a function's entry)
}

// tailJumps returns the direct jumps (unconditional or conditional) of the
// function at entry to other functions' entries, decoded once.
func (d *objData) tailJumps(entry uint64) []tailJump {
	d.tailMu.Lock()
	if j, ok := d.tails[entry]; ok {
		d.tailMu.Unlock()
		return j
	}
	d.tailMu.Unlock()
	var out []tailJump
	start, end, ok := d.syms.bounds(entry)
	if ok && start == entry && end-start <= MaxFunctionCode {
		if off, ok := d.fileOffset(start); ok {
			if code, ok := d.readCode(off, int(end-start)); ok {
				out = decodeTailJumps(d, code, start, end)
			}
		}
	}
	d.tailMu.Lock()
	if d.tails == nil {
		d.tails = map[uint64][]tailJump{}
	}
	d.tails[entry] = out
	d.tailMu.Unlock()
	return out
}

func decodeTailJumps(d *objData, code []byte, start, end uint64) []tailJump {
	var out []tailJump
	for pc := 0; pc < len(code); {
		in, err := x86asm.Decode(code[pc:], 64)
		if err != nil || in.Len == 0 {
			pc++
			continue
		}
		at := start + uint64(pc)
		pc += in.Len
		if in.Op == x86asm.CALL || in.Op == x86asm.RET || in.Op == x86asm.LOOP || in.Op == x86asm.JRCXZ ||
			in.Op == x86asm.JECXZ || in.Op == x86asm.JCXZ {
			continue
		}
		if !isJump(in.Op) {
			continue
		}
		rel, ok := in.Args[0].(x86asm.Rel)
		if !ok {
			continue
		}
		to := at + uint64(in.Len) + uint64(int64(rel))
		if to >= start && to < end {
			continue
		}
		if s, _, ok := d.syms.bounds(to); ok && s == to {
			out = append(out, tailJump{at: at, to: to})
		} else if e, ok := d.ownStub(to); ok && e != start {
			// A tail call through the object's own PLT stub of a
			// function it defines.
			out = append(out, tailJump{at: at, to: e})
		}
	}
	return out
}

func isJump(op x86asm.Op) bool {
	switch op {
	case x86asm.JMP, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JG, x86asm.JGE,
		x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS:
		return true
	}
	return false
}

// ownStub returns the entry of the function that the PLT stub holding addr
// reaches, when this object defines it; ok is false when addr is in no
// stub or the function is another object's.
func (d *objData) ownStub(addr uint64) (uint64, bool) {
	name, ok := d.syms.stub(addr)
	if !ok {
		return 0, false
	}
	return d.entryOf(name)
}

// entryOf returns the entry of the sized function symbol named name.
func (d *objData) entryOf(name string) (uint64, bool) {
	d.tailMu.Lock()
	defer d.tailMu.Unlock()
	if d.named == nil {
		d.named = map[string]uint64{}
		if d.syms != nil {
			for _, s := range d.syms.syms {
				if s.sized {
					d.named[s.name] = s.addr
				}
			}
		}
	}
	a, ok := d.named[name]
	return a, ok
}
