package symbol

import (
	"fmt"
	"os"

	"golang.org/x/arch/x86/x86asm"
)

// MaxFunctionCode is the largest function FunctionCode reads.
const MaxFunctionCode = 1 << 20

// Code is the machine code of one function.
type Code struct {
	Offset uint64 // file offset of its first instruction
	Addr   uint64 // ELF virtual address of its first instruction
	Bytes  []byte
}

// FunctionCode returns the machine code of the function holding fileOffset.
// Its bounds come from the symbol table (a symbol with a size), else from the
// unwind tables (the FDE covering the address: a function no symbol names, or
// a split-off part such as GCC's .cold blocks). It fails when neither gives
// bounds, when the function is larger than MaxFunctionCode, and when only a
// separate debug file stands in for the object (it holds no code).
func (o *Object) FunctionCode(fileOffset uint64) (Code, error) {
	d := o.d
	if d.standIn {
		return Code{}, fmt.Errorf("%s is not on disk (only its debug file is): no code to show", o.path)
	}
	pc, ok := d.vaddr(fileOffset)
	if !ok {
		return Code{}, fmt.Errorf("offset 0x%x is outside the loaded segments of %s", fileOffset, o.path)
	}
	d.load()
	start, end, ok := d.syms.bounds(pc)
	if !ok {
		d.cfiOnce.Do(func() { d.cfi = d.loadCFI() })
		if d.cfi != nil {
			start, end, ok = d.cfi.FuncRange(pc)
		}
	}
	if !ok {
		return Code{}, fmt.Errorf("no symbol or unwind table gives the bounds of the function at %s+0x%x", o.path, fileOffset)
	}
	if end-start > MaxFunctionCode {
		return Code{}, fmt.Errorf("the function at %s+0x%x is %d bytes long: more than the %d shown", o.path, fileOffset, end-start, MaxFunctionCode)
	}
	c, err := o.code(start, end)
	if err != nil {
		return Code{}, fmt.Errorf("the function at %s+0x%x: %w", o.path, fileOffset, err)
	}
	return c, nil
}

// CodeBetween returns the object's bytes at ELF virtual addresses
// [start, end), which one loaded segment must hold; at most
// MaxFunctionCode of them.
func (o *Object) CodeBetween(start, end uint64) (Code, error) {
	if o.d.standIn {
		return Code{}, fmt.Errorf("%s is not on disk (only its debug file is): no code to show", o.path)
	}
	if end <= start || end-start > MaxFunctionCode {
		return Code{}, fmt.Errorf("%s: code 0x%x-0x%x: empty or more than %d bytes", o.path, start, end, MaxFunctionCode)
	}
	c, err := o.code(start, end)
	if err != nil {
		return Code{}, fmt.Errorf("%s: code 0x%x-0x%x: %w", o.path, start, end, err)
	}
	return c, nil
}

// code reads the bytes at virtual addresses [start, end).
func (o *Object) code(start, end uint64) (Code, error) {
	d := o.d
	off, ok := d.fileOffset(start)
	if !ok {
		return Code{}, fmt.Errorf("not in the file")
	}
	if endOff, ok := d.fileOffset(end - 1); !ok || endOff != off+(end-start)-1 {
		return Code{}, fmt.Errorf("not contiguous in the file")
	}
	c := Code{Offset: off, Addr: start, Bytes: make([]byte, end-start)}
	if d.data != nil {
		if off+uint64(len(c.Bytes)) > uint64(len(d.data)) {
			return Code{}, fmt.Errorf("past the end of the image")
		}
		copy(c.Bytes, d.data[off:])
		return c, nil
	}
	f, err := os.Open(d.path)
	if err != nil {
		return Code{}, err
	}
	defer f.Close()
	if _, err := f.ReadAt(c.Bytes, int64(off)); err != nil {
		return Code{}, fmt.Errorf("reading it: %w", err)
	}
	return c, nil
}

// Vaddr translates a file offset of the object to its ELF virtual address.
// An offset past the bytes of the loaded segments (the end of a range of
// addresses around some code) is translated as the nearest segment
// before it maps its own offsets.
func (o *Object) Vaddr(fileOffset uint64) (uint64, bool) {
	if v, ok := o.d.vaddr(fileOffset); ok {
		return v, true
	}
	var near *segment
	for i, s := range o.d.loads {
		if s.off <= fileOffset && (near == nil || s.off > near.off) {
			near = &o.d.loads[i]
		}
	}
	if near == nil {
		return 0, false
	}
	return near.vaddr + (fileOffset - near.off), true
}

// Sym is a code symbol of an object with a size: its name as in the
// symbol table and its ELF virtual addresses [Start, End).
type Sym struct {
	Name       string
	Start, End uint64
}

// Symbols returns the object's code symbols that have a size, in address
// order.
func (o *Object) Symbols() []Sym {
	o.d.load()
	t := o.d.syms
	if t == nil {
		return nil
	}
	var out []Sym
	for _, s := range t.syms {
		if s.sized {
			out = append(out, Sym{s.name, s.addr, s.end})
		}
	}
	return out
}

// Instr is one decoded instruction.
type Instr struct {
	Offset, Addr uint64 // file offset and ELF virtual address
	Text         string // AT&T (GNU) or Intel syntax; a call names its target function
	File         string // the source line of its innermost frame, "" and 0 when unknown
	Line         int
	Function     string // the function it is in (its outermost frame), "" when unknown
}

// Disassemble decodes c as x86-64, in AT&T syntax as objdump and perf
// annotate print it, or Intel's, naming the function each call goes to
// and each instruction's source line. A byte that starts no instruction
// is "(bad)".
func (o *Object) Disassemble(c Code, intel bool) []Instr {
	var out []Instr
	for pos := 0; pos < len(c.Bytes); {
		off, pc := c.Offset+uint64(pos), c.Addr+uint64(pos)
		in := Instr{Offset: off, Addr: pc}
		inst, err := x86asm.Decode(c.Bytes[pos:], 64)
		size := inst.Len
		if err != nil || size == 0 {
			in.Text, size = "(bad)", 1
		} else {
			if intel {
				in.Text = x86asm.IntelSyntax(inst, pc, nil)
			} else {
				in.Text = x86asm.GNUSyntax(inst, pc, nil)
			}
			if inst.Op == x86asm.CALL {
				if rel, ok := inst.Args[0].(x86asm.Rel); ok {
					if fr := o.LookupAddr(pc + uint64(size) + uint64(int64(rel))); len(fr) > 0 && fr[len(fr)-1].Function != "" {
						in.Text += "  # " + fr[len(fr)-1].Function
					}
				}
			}
		}
		if fr := o.Lookup(off); len(fr) > 0 {
			in.File, in.Line = fr[0].File, fr[0].Line
			in.Function = fr[len(fr)-1].Function
		}
		out = append(out, in)
		pos += size
	}
	return out
}
