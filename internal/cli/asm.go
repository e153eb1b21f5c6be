package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

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
	open, err := recordedObjects(paths)
	if err != nil {
		return nil, err
	}
	return func(l profile.Listing) []render.AsmBlock {
		if strings.HasPrefix(l.Path, "[") || l.Path == "" {
			return []render.AsmBlock{{Note: "the code of " + l.Object + " is not in a file culprit reads"}}
		}
		obj, err := open(l.Path)
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

// recordedObjects returns a function that opens an object of the
// recordings at paths by its path as it was recorded: the build-id must
// match, or a copy kept by culprit archive stands in. Other paths are
// refused.
func recordedObjects(paths []string) (func(path string) (*symbol.Object, error), error) {
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
	return func(path string) (*symbol.Object, error) {
		id, ok := ids[path]
		if !ok || strings.HasPrefix(path, "[") || path == "" {
			return nil, fmt.Errorf("%q is not a file the recordings name", path)
		}
		return sym.Object(path, id)
	}, nil
}

// decode disassembles a function's code, naming its source lines and the
// functions it calls.
func decode(obj *symbol.Object, code symbol.Code) render.AsmBlock {
	b := render.AsmBlock{Offset: code.Offset, Syntax: "AT&T"}
	if fr := obj.Lookup(code.Offset); len(fr) > 0 {
		b.Function = fr[len(fr)-1].Function
	}
	for _, in := range obj.Disassemble(code, false) {
		b.Instrs = append(b.Instrs, render.AsmInstr{Offset: in.Offset, Addr: in.Addr, Text: in.Text, File: in.File, Line: in.Line})
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
