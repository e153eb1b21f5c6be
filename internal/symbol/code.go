package symbol

import (
	"fmt"
	"os"
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
	off, ok := d.fileOffset(start)
	if !ok {
		return Code{}, fmt.Errorf("the function at %s+0x%x is not in the file", o.path, fileOffset)
	}
	if endOff, ok := d.fileOffset(end - 1); !ok || endOff != off+(end-start)-1 {
		return Code{}, fmt.Errorf("the function at %s+0x%x is not contiguous in the file", o.path, fileOffset)
	}
	c := Code{Offset: off, Addr: start, Bytes: make([]byte, end-start)}
	if d.data != nil {
		if off+uint64(len(c.Bytes)) > uint64(len(d.data)) {
			return Code{}, fmt.Errorf("the function at %s+0x%x lies past the end of the image", o.path, fileOffset)
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
		return Code{}, fmt.Errorf("reading the code of %s+0x%x: %w", o.path, fileOffset, err)
	}
	return c, nil
}
