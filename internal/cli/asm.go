package cli

import (
	"io"
	"sort"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/symbol"
)

// maxAsmBlocks bounds the functions whose code one listing shows (a function
// inlined into many others has samples in each).
const maxAsmBlocks = 8

// disassembler returns a render.Disassembler for report --list --asm over
// the recordings at paths: it opens each listed function's object as it was
// recorded (the build-id must match, or a copy kept by culprit archive
// stands in), reads the code of the functions holding its samples, decodes
// it as x86-64 (AT&T syntax, as perf annotate and objdump print it), and
// puts each sample on the instruction holding its address (a caller's
// address is within its call instruction).
func disassembler(paths []string) (render.Disassembler, error) {
	if len(paths) == 0 {
		paths = []string{"culprit.rec"}
	}
	paths, err := storedPaths(paths, io.Discard)
	if err != nil {
		return nil, err
	}
	recorded, err := loader.RecordedObjects(paths)
	if err != nil {
		return nil, err
	}
	ids := map[string][]byte{}
	for _, o := range recorded {
		if _, ok := ids[o.Path]; !ok {
			ids[o.Path] = o.BuildID
		}
	}
	sym := symbol.New(symbol.Options{})
	return func(l profile.Listing) []render.AsmBlock {
		if strings.HasPrefix(l.Path, "[") || l.Path == "" {
			return []render.AsmBlock{{Note: "the code of " + l.Object + " is not in a file culprit reads"}}
		}
		obj, err := sym.Object(l.Path, ids[l.Path])
		if err != nil {
			return []render.AsmBlock{{Note: err.Error()}}
		}
		var blocks []render.AsmBlock
		var ends []uint64 // file offset past each block's code
		var notes []string
		find := func(off uint64) *render.AsmInstr {
			for bi, b := range blocks {
				if off >= b.Offset && off < ends[bi] {
					return instrAt(b.Instrs, off)
				}
			}
			return nil
		}
		for _, ac := range l.Offsets {
			if find(ac.Offset) != nil {
				continue
			}
			if len(blocks) == maxAsmBlocks {
				notes = append(notes, "more functions hold samples of "+l.Function+": not shown")
				break
			}
			code, err := obj.FunctionCode(ac.Offset)
			if err != nil {
				notes = append(notes, err.Error())
				continue
			}
			blocks = append(blocks, decode(obj, code))
			ends = append(ends, code.Offset+uint64(len(code.Bytes)))
		}
		for _, ac := range l.Offsets {
			if in := find(ac.Offset); in != nil {
				in.Self += ac.Self
				in.Total += ac.Total
			}
		}
		for _, n := range notes {
			blocks = append(blocks, render.AsmBlock{Note: n})
		}
		return blocks
	}, nil
}

// decode disassembles a function's code, naming its source lines and the
// functions it calls.
func decode(obj *symbol.Object, code symbol.Code) render.AsmBlock {
	b := render.AsmBlock{Offset: code.Offset, Syntax: "AT&T"}
	if fr := obj.Lookup(code.Offset); len(fr) > 0 {
		b.Function = fr[len(fr)-1].Function
	}
	for pos := 0; pos < len(code.Bytes); {
		off, pc := code.Offset+uint64(pos), code.Addr+uint64(pos)
		in := render.AsmInstr{Offset: off, Addr: pc}
		inst, err := x86asm.Decode(code.Bytes[pos:], 64)
		size := inst.Len
		if err != nil || size == 0 {
			in.Text, size = "(bad)", 1
		} else {
			in.Text = x86asm.GNUSyntax(inst, pc, nil)
			if inst.Op == x86asm.CALL {
				if rel, ok := inst.Args[0].(x86asm.Rel); ok {
					if fr := obj.LookupAddr(pc + uint64(size) + uint64(int64(rel))); len(fr) > 0 && fr[len(fr)-1].Function != "" {
						in.Text += "  # " + fr[len(fr)-1].Function
					}
				}
			}
		}
		if fr := obj.Lookup(off); len(fr) > 0 {
			in.File, in.Line = fr[0].File, fr[0].Line
		}
		b.Instrs = append(b.Instrs, in)
		pos += size
	}
	return b
}

// instrAt returns the instruction of ins (in address order, within one
// function) that holds file offset off: the last one starting at or before it.
func instrAt(ins []render.AsmInstr, off uint64) *render.AsmInstr {
	i := sort.Search(len(ins), func(i int) bool { return ins[i].Offset > off }) - 1
	if i < 0 {
		return nil
	}
	return &ins[i]
}
